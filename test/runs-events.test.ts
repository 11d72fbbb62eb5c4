// GET /v1/runs/{run_id}/events (issue 18) with two API processes and a worker process: the run is
// started on one API, worked by the worker process, and streamed from the other API, woken by
// PostgreSQL's notifications. Status, progress and done events with the run as GET shows it; ids
// that Last-Event-ID resumes after; 204 once the final event was seen; the errors before a stream
// starts in the envelope; 10 streams per key per process, the 11th 429; heartbeats; a closing
// server ends its streams. The SDK's runs.events over the same route.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Toolrun } from '@toolrun/sdk';
import { openSse } from '../src/events/sse.js';
import { createTestApp } from './helpers/app.js';
import { assertError } from './helpers/error-envelope.js';
import { uploadReadyFile } from './helpers/faults.js';
import { bearer, makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { makePng } from './helpers/media.js';
import { waitFor } from './helpers/process.js';
import { insertAppRun } from './helpers/runs.js';
import { freePort, startTestServer, type TestServer } from './helpers/server.js';
import { socketRequest } from './helpers/socket-request.js';
import { asAnswer, openStream, type OpenedStream } from './helpers/sse-client.js';
import { testRegistry } from './helpers/test-tools.js';
import { killWorkerProcesses, WorkerProcess } from './helpers/worker-processes.js';

let a: TestServer;
let b: TestServer;
let team: TeamFixture;
let fileId = '';

before(async () => {
  a = await startTestServer({ tools: testRegistry(), env: { TOOLRUN_WORKER_POLL_MS: '200' } });
  b = await startTestServer({ tools: testRegistry(), database: a.database });
  await WorkerProcess.spawn(a, { TOOLRUN_WORKER_CONCURRENCY: '3' });
  team = await makeTeam(a.database.db, { sparks: 1000, rate: 300 });
  fileId = await uploadReadyFile(a.url, team.key, await makePng(32, 32), 'a.png', 'image/png');
});
after(async () => {
  await killWorkerProcesses();
  await b.close();
  await a.close();
});

interface RunJson {
  id: string;
  status: string;
  progress: number;
}

async function start(mode: string): Promise<string> {
  const res = await socketRequest(a.url, '/v1/tools/test_copy/runs', {
    method: 'POST',
    headers: { ...bearer(team.key), 'content-type': 'application/json' },
    body: JSON.stringify({ inputs: { image: [fileId], mode } }),
  });
  assert.equal(res.statusCode, 202, res.body);
  return res.json<RunJson>().id;
}

const stream = (s: TestServer, id: string, headers: Record<string, string> = {}, key = team.key) =>
  openStream(`${s.url}/v1/runs/${id}/events`, { ...bearer(key), ...headers });

async function cancel(id: string): Promise<void> {
  const res = await socketRequest(a.url, `/v1/runs/${id}/cancel`, { method: 'POST', headers: bearer(team.key) });
  assert.equal(res.statusCode, 200, res.body);
}

const runOf = (e: { data: string }) => JSON.parse(e.data) as RunJson;

async function dbRun(id: string): Promise<{ status: string; progress: number }> {
  const { rows } = await a.database.db.pool.query<{ status: string; progress: number }>('SELECT status, progress FROM runs WHERE id = $1', [id]);
  return rows[0] ?? { status: 'missing', progress: 0 };
}

describe('GET /v1/runs/{run_id}/events', () => {
  test('streamed from the other API process: status, progress, then done with the run as GET shows it, and the stream ends', async () => {
    const id = await start('slow');
    const s = await stream(b, id);
    assert.equal(s.status, 200);
    assert.match(String(s.headers.get('content-type')), /^text\/event-stream/);
    assert.ok(s.headers.get('x-request-id'));
    await s.untilEnded(60_000);
    const names = s.events.map((e) => e.event);
    assert.equal(names[0], 'status');
    assert.equal(names.at(-1), 'done');
    assert.equal(names.filter((n) => n === 'done').length, 1);
    assert.ok(names.includes('progress'), `progress events for a tool that reports progress: ${names.join(',')}`);
    const ids = s.events.map((e) => Number(e.id));
    for (let i = 1; i < ids.length; i++) assert.ok((ids[i] ?? 0) > (ids[i - 1] ?? 0), `ids grow: ${ids.join(',')}`);
    for (const e of s.events.filter((x) => x.event === 'progress')) assert.equal(runOf(e).status, 'running');
    const progress = s.events.map((e) => runOf(e).progress);
    for (let i = 1; i < progress.length; i++) assert.ok((progress[i] ?? 0) >= (progress[i - 1] ?? 0));
    const done = s.events.at(-1);
    assert.ok(done);
    const get = await socketRequest(b.url, `/v1/runs/${id}`, { headers: bearer(team.key) });
    assert.deepEqual(JSON.parse(done.data), get.json());
    assert.equal(runOf(done).status, 'succeeded');
  });

  test('Last-Event-ID resumes after what was seen; once the final event was seen, 204', async () => {
    const id = await start('hang');
    // The hanging tool reports 0.25 once, then waits to be stopped: that is its last change.
    await waitFor('the run at 0.25', async () => {
      const r = await dbRun(id);
      return r.status === 'running' && r.progress === 0.25;
    });
    const first = await stream(a, id);
    const seen = await first.next((e) => runOf(e).progress === 0.25, 'the event with progress 0.25');
    assert.equal(first.events[0]?.event, 'status', 'the first event is the run as it is');
    first.close();

    const resumed = await stream(b, id, { 'last-event-id': String(seen.id) });
    assert.equal(resumed.status, 200);
    await cancel(id);
    await resumed.untilEnded();
    assert.equal(resumed.events.length, 1, `only what came after: ${JSON.stringify(resumed.events)}`);
    const done = resumed.events[0];
    assert.ok(done && done.event === 'done' && Number(done.id) > Number(seen.id));
    assert.equal(runOf(done).status, 'canceled');

    const again = await stream(a, id, { 'last-event-id': String(done.id) });
    assert.equal(again.status, 204);
    assert.equal(again.body, '');
    // A final run not fully seen: its done event at once, then the end.
    const late = await stream(a, id, { 'last-event-id': String(seen.id) });
    await late.untilEnded();
    assert.deepEqual(late.events.map((e) => [e.event, e.id]), [['done', done.id]]);
  });

  test('the SDK: runs.events yields status, progress and done, then ends', async () => {
    const id = await start('slow');
    const client = new Toolrun({ apiKey: team.key, baseUrl: b.url });
    const seen: string[] = [];
    let last: RunJson | null = null;
    for await (const e of client.runs.events(id)) {
      seen.push(e.event);
      last = e.run;
    }
    assert.equal(seen[0], 'status');
    assert.equal(seen.at(-1), 'done');
    assert.equal(last?.status, 'succeeded');
  });

  test('errors before the stream starts are in the envelope: 404, 422 (path and header), 403 without read', async () => {
    assertError(asAnswer(await stream(b, randomUUID())), 404, 'run_not_found');
    const malformed = assertError(asAnswer(await stream(b, 'not-a-uuid')), 422, 'invalid_request');
    assert.deepEqual(malformed.errors?.map((e) => e.loc), [['path', 'run_id']]);
    const id = await start('ok');
    const badHeader = assertError(asAnswer(await stream(b, id, { 'last-event-id': 'abc' })), 422, 'invalid_request');
    assert.deepEqual(badHeader.errors?.map((e) => e.loc), [['header', 'last-event-id']]);

    const other = await makeTeam(a.database.db);
    assertError(asAnswer(await stream(b, id, {}, other.key)), 404, 'run_not_found');

    // An app run (started in the console) is not visible through the API.
    const appRun = await insertAppRun(a.database.db.pool, team);
    await a.database.db.pool.query(`UPDATE runs SET status = 'canceled', finished_at = now() WHERE id = $1`, [appRun.id]);
    assertError(asAnswer(await stream(b, appRun.id)), 404, 'run_not_found');

    // Keys always carry read today; one without it (written in the database) is refused like any scope.
    const noRead = await makeTeam(a.database.db);
    await a.database.db.pool.query(`UPDATE api_keys SET scopes = ARRAY['run'] WHERE id = $1`, [noRead.keyId]);
    const refused = await waitFor('the key change heard', async () => {
      const s = await stream(b, id, {}, noRead.key);
      if (s.status === 200) s.close();
      return s.status === 403 ? s : null;
    });
    assert.deepEqual(assertError(asAnswer(refused), 403, 'insufficient_scope').details, { required_scope: 'read' });
  });

  test('10 open streams per key and process: the 11th is 429 rate_limited, another process still takes one, and a closed one frees its place', async () => {
    const id = await start('hang');
    const open: OpenedStream[] = [];
    for (let i = 0; i < 10; i++) {
      const s = await stream(a, id);
      assert.equal(s.status, 200);
      open.push(s);
    }
    const refused = asAnswer(await stream(a, id));
    const error = assertError(refused, 429, 'rate_limited');
    assert.equal(refused.headers['retry-after'], '5');
    assert.deepEqual(error.details, { limit_per_minute: 300, reason: 'too_many_streams', limit_streams_per_key: 10, limit_streams_per_team: 250 });
    const elsewhere = await stream(b, id);
    assert.equal(elsewhere.status, 200);
    open.push(elsewhere);

    open.shift()?.close();
    const freed = await waitFor('a place freed by the closed stream', async () => {
      const s = await stream(a, id);
      return s.status === 200 ? s : null;
    });
    open.push(freed);
    await cancel(id);
    for (const s of open) await s.untilEnded();
    for (const s of open) assert.equal(s.events.at(-1)?.event, 'done');
  });

  test('a closing server ends its streams (the client reconnects elsewhere with Last-Event-ID)', async () => {
    const c = await startTestServer({ tools: testRegistry(), database: a.database });
    const id = await start('hang');
    const s = await stream(c, id);
    await s.next(() => true, 'the first event');
    await c.close();
    await s.untilEnded();
    assert.ok(!s.events.some((e) => e.event === 'done'));
    const resumed = await stream(a, id, { 'last-event-id': String(s.events.at(-1)?.id) });
    await cancel(id);
    await resumed.untilEnded();
    assert.equal(resumed.events.at(-1)?.event, 'done');
  });
});

describe('the event-stream answer', () => {
  test('sends a comment heartbeat while nothing happens, and Fastify ends it when the client leaves', async () => {
    let ended = false;
    const port = await freePort();
    const t = await createTestApp({
      database: a.database,
      extraRoutes: async (app) => {
        app.get('/test/sse', async (_request, reply) => {
          const sse = openSse(reply, { heartbeatMs: 20 });
          void sse.done.then(() => (ended = true));
          return reply;
        });
      },
    });
    await t.app.listen({ port, host: '127.0.0.1' });
    try {
      const s = await openStream(`http://127.0.0.1:${port}/test/sse`, {});
      assert.equal(s.status, 200);
      await waitFor('two heartbeats', () => (s.raw().match(/^: heartbeat$/gm) ?? []).length >= 2);
      assert.match(s.raw(), /^retry: \d+\n\n/);
      assert.equal(s.events.length, 0, 'comments are not events');
      s.close();
      await waitFor('the server to see the client leave', () => ended);
    } finally {
      await t.close();
    }
  });
});
