// GET /v1/events (issue 18): the team's run events as server-sent events, the same id and the
// same body bytes as the webhook delivery of each; Last-Event-ID resumes after an event (and an
// unknown or foreign one is 422); other teams' events and app runs' events never appear; the
// webhooks scope and an owner or admin are needed. The SDK's SSE parser and events.stream().
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, beforeEach, describe, test } from 'node:test';
import { parseSse, Toolrun, type SseMessage } from '@toolrun/sdk';
import type { RunWorker } from '../src/runs/worker.js';
import { cancelLockedRun } from '../src/runs/transitions.js';
import { assertError } from './helpers/error-envelope.js';
import { bearer, makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { closeReceivers, Receiver } from './helpers/receiver.js';
import { insertAppRun } from './helpers/runs.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { asAnswer, openStream, type OpenedStream } from './helpers/sse-client.js';
import { waitFor } from './helpers/process.js';
import { testRegistry } from './helpers/test-tools.js';
import { startTestWorker } from './helpers/worker.js';
import { createEndpoint, eventOfRun, Runs, startWebhookWorker, stopWebhookWorkers, webhookTeam } from './helpers/webhooks.js';

const tools = testRegistry();
const ENV = { TOOLRUN_ALLOW_PRIVATE_NETWORK: '1', TOOLRUN_WORKER_POLL_MS: '200' };
let s: TestServer;
let runWorker: RunWorker;
let team: TeamFixture;
let runs: Runs;

before(async () => {
  s = await startTestServer({ tools, env: ENV });
  runWorker = await startTestWorker(s, tools);
  await startWebhookWorker(s);
});
beforeEach(async () => {
  team = await webhookTeam(s.database.db);
  runs = await new Runs(s, team.key).init();
});
after(async () => {
  await stopWebhookWorkers();
  await runWorker.stop(1000);
  await closeReceivers();
  // The SDK's fetch (undici) leaves a spare connection that never sends a request when a stream
  // is stopped; Node's close does not count it idle and would wait for it to time out.
  s.app.server.closeAllConnections();
  await s.close();
});

const events = (key: string, headers: Record<string, string> = {}) => openStream(`${s.url}/v1/events`, { ...bearer(key), ...headers });

async function eventFor(stream: OpenedStream, runId: string): Promise<SseMessage> {
  return stream.next((e) => (JSON.parse(e.data) as { data: { run: { id: string } } }).data.run.id === runId, `the event of run ${runId}`);
}

async function finished(mode: 'ok' | 'fail'): Promise<string> {
  const run = await runs.start(mode);
  return run.id;
}

describe('GET /v1/events', () => {
  test("a run's final event arrives with the id, type and body bytes of its webhook delivery; events from before the connection do not", async () => {
    const before = await runs.canceled();
    const r = await Receiver.start();
    await createEndpoint(s, team.key, r.url('/hooks'));
    const stream = await events(team.key);
    assert.equal(stream.status, 200);
    assert.match(String(stream.headers.get('content-type')), /^text\/event-stream/);

    const canceled = await runs.canceled();
    const succeeded = await finished('ok');
    const failed = await finished('fail');
    for (const [runId, type] of [
      [canceled.id, 'run.canceled'],
      [succeeded, 'run.succeeded'],
      [failed, 'run.failed'],
    ] as const) {
      const streamed = await eventFor(stream, runId);
      const stored = await eventOfRun(s.database.db, runId);
      assert.equal(streamed.id, stored.id);
      assert.equal(streamed.event, type);
      await waitFor(`the delivery of ${stored.id}`, () => r.requests.some((x) => x.body.toString('utf8').includes(stored.id)));
      const delivered = r.requests.find((x) => x.body.toString('utf8').includes(stored.id));
      assert.ok(delivered);
      assert.equal(streamed.data, delivered.body.toString('utf8'), 'the same bytes as the webhook body');
      assert.equal(delivered.headers['service-event'], type);
    }
    assert.ok(!stream.events.some((e) => e.data.includes(before.id)), 'nothing from before the connection');
    stream.close();
  });

  test('Last-Event-ID sends what came after that event; an unknown event, or another team\'s, is 422 at [header, last-event-id]', async () => {
    const first = await events(team.key);
    const r1 = await runs.canceled();
    const r2 = await runs.canceled();
    const e1 = await eventFor(first, r1.id);
    await eventFor(first, r2.id);
    first.close();
    const r3 = await runs.canceled();

    const resumed = await events(team.key, { 'last-event-id': String(e1.id) });
    assert.equal(resumed.status, 200);
    await eventFor(resumed, r2.id);
    await eventFor(resumed, r3.id);
    assert.ok(!resumed.events.some((e) => e.id === e1.id), 'not the event named');
    resumed.close();

    const unknown = assertError(asAnswer(await events(team.key, { 'last-event-id': randomUUID() })), 422, 'invalid_request');
    assert.deepEqual(unknown.errors?.map((e) => e.loc), [['header', 'last-event-id']]);
    const other = await webhookTeam(s.database.db);
    const foreign = assertError(asAnswer(await events(other.key, { 'last-event-id': String(e1.id) })), 422, 'invalid_request');
    assert.deepEqual(foreign, { ...unknown, request_id: foreign.request_id });
    const malformed = assertError(asAnswer(await events(team.key, { 'last-event-id': 'nope' })), 422, 'invalid_request');
    assert.deepEqual(malformed.errors?.map((e) => e.loc), [['header', 'last-event-id']]);
  });

  test("another team's events and app runs' events never appear", async () => {
    const other = await webhookTeam(s.database.db);
    const otherRuns = await new Runs(s, other.key).init();
    const mine = await events(team.key);
    const theirs = await events(other.key);

    // An app run of this team ending (the console's playground): its event is written, never streamed.
    const appRun = await insertAppRun(s.database.db.pool, team);
    await s.database.db.tx((tx) => cancelLockedRun(tx, appRun));
    const theirRun = await otherRuns.canceled();
    const myRun = await runs.canceled();
    await eventFor(mine, myRun.id);
    await eventFor(theirs, theirRun.id);
    assert.deepEqual(mine.events.map((e) => e.id), [(await eventOfRun(s.database.db, myRun.id)).id]);
    assert.deepEqual(theirs.events.map((e) => e.id), [(await eventOfRun(s.database.db, theirRun.id)).id]);
    mine.close();
    theirs.close();
  });

  test('a key without the webhooks scope is 403 insufficient_scope; a member\'s key is 403 insufficient_role', async () => {
    const readOnly = await makeTeam(s.database.db, { scopes: ['read'] });
    assert.deepEqual(assertError(asAnswer(await events(readOnly.key)), 403, 'insufficient_scope').details, { required_scope: 'webhooks' });
    // Only owners and admins make keys; one whose maker became a plain member since is refused.
    const demoted = await webhookTeam(s.database.db);
    await s.database.db.pool.query(`UPDATE members SET role = 'member' WHERE id = $1`, [demoted.memberId]);
    const refused = await waitFor('the role change heard', async () => {
      const res = await events(demoted.key);
      if (res.status === 200) res.close();
      return res.status === 403 ? res : null;
    });
    assert.deepEqual(assertError(asAnswer(refused), 403, 'insufficient_role').details, { required_role: 'admin', role: 'member' });
  });

  test('the SDK: events.stream() yields each event with its body, until the loop stops', async () => {
    const client = new Toolrun({ apiKey: team.key, baseUrl: s.url });
    const stream = client.events.stream();
    // Events count from the connection, which the first read opens: runs end until one is on it.
    const next = stream.next();
    const ended: string[] = [];
    let got: Awaited<typeof next> | null = null;
    while (!got) got = await Promise.race([next, runs.canceled().then((r) => void ended.push(r.id)).then(() => null)]);
    assert.ok(!got.done);
    assert.equal(got.value.type, 'run.canceled');
    const runId = got.value.event.data.run?.id ?? '';
    assert.equal((await runs.get(runId)).id, runId, "one of this team's runs");
    assert.equal(JSON.parse(got.value.body).id, got.value.id);
    assert.equal(got.value.id, (await eventOfRun(s.database.db, runId)).id);
    await stream.return(undefined);
  });
});

describe('the SDK SSE parser', () => {
  async function parse(chunks: string[]): Promise<SseMessage[]> {
    async function* body() {
      for (const c of chunks) yield new TextEncoder().encode(c);
    }
    const out: SseMessage[] = [];
    for await (const m of parseSse(body())) out.push(m);
    return out;
  }

  test('events split anywhere, CRLF/CR/LF, multi-line data, comments, ids that carry over, a BOM', async () => {
    const got = await parse(['\uFEFFretry: 10\n\n: heartbeat\n\nid: 1\nev', 'ent: status\ndata: {"a":\r\ndata: 1}\r', '\n\r\ndata:x\n\nid: 2\n', 'event: done\ndata\n\ndata: lost']);
    assert.deepEqual(got, [
      { id: '1', event: 'status', data: '{"a":\n1}' },
      { id: '1', event: 'message', data: 'x' },
      { id: '2', event: 'done', data: '' },
    ]);
  });

  test('a field without a colon, a space kept after the first, an id with NUL ignored, and no data: no event', async () => {
    const got = await parse(['id: 5\nevent: x\n\n', 'data:  two spaces\nid: a\u0000b\n\n']);
    assert.deepEqual(got, [{ id: '5', event: 'message', data: ' two spaces' }]);
  });
});
