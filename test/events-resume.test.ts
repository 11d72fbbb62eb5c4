// GET /v1/runs/{run_id}/events resumed with Last-Event-ID (issue 25, item 10). An id above the
// run's current change number was never sent, so it is refused (422 at ["header","last-event-id"])
// rather than opening a stream that waits for a number the run may never reach: such a stream
// missed the run's done event and held one of the key's stream places for good. A stream always
// ends once its run is final: resumed from a valid id (the current one, or an earlier one) or not.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import type { RunWorker } from '../src/runs/worker.js';
import { STREAMS_PER_KEY } from '../src/events/hub.js';
import { assertError } from './helpers/error-envelope.js';
import { bearer, makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { waitFor } from './helpers/process.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { socketRequest } from './helpers/socket-request.js';
import { asAnswer, openStream, type OpenedStream } from './helpers/sse-client.js';
import { testRegistry } from './helpers/test-tools.js';
import { Runs } from './helpers/webhooks.js';
import { startTestWorker } from './helpers/worker.js';

const tools = testRegistry();
let s: TestServer;
let worker: RunWorker;
let team: TeamFixture;
let runs: Runs;

before(async () => {
  s = await startTestServer({ tools, env: { TOOLRUN_WORKER_POLL_MS: '200' } });
  worker = await startTestWorker(s, tools);
});
beforeEach(async () => {
  team = await makeTeam(s.database.db, { sparks: 1000, rate: 300 });
  runs = await new Runs(s, team.key).init();
});
after(async () => {
  await worker.stop(1000);
  await s.close();
});

const stream = (id: string, headers: Record<string, string> = {}) => openStream(`${s.url}/v1/runs/${id}/events`, { ...bearer(team.key), ...headers });

async function eventSeq(id: string): Promise<number> {
  const { rows } = await s.database.db.pool.query<{ event_seq: number }>('SELECT event_seq FROM runs WHERE id = $1', [id]);
  return rows[0]?.event_seq ?? 0;
}

/**
 * A run the worker is working on: the test tool's hang mode reports 0.25 once, then runs until
 * canceled, so its change number stays put from then on.
 */
async function workingRun(): Promise<{ id: string; seq: number }> {
  const { id } = await runs.start('hang');
  await waitFor('the run running at 0.25', async () => {
    const run = await runs.get(id);
    return run.status === 'running' && run.progress === 0.25;
  });
  return { id, seq: await eventSeq(id) };
}

async function cancel(id: string): Promise<void> {
  const res = await socketRequest(s.url, `/v1/runs/${id}/cancel`, { method: 'POST', headers: bearer(team.key) });
  assert.equal(res.statusCode, 200, res.body);
}

function assertAboveRefused(answer: OpenedStream, seq: number): void {
  const body = assertError(asAnswer(answer), 422, 'invalid_request');
  assert.deepEqual(
    body.errors?.map((e) => [e.loc, e.code]),
    [[['header', 'last-event-id'], 'out_of_range']],
  );
  assert.match(body.errors?.[0]?.message ?? '', new RegExp(`\\b${seq}\\b`), 'the message names the run\'s current id');
}

describe('GET /v1/runs/{run_id}/events with Last-Event-ID', () => {
  test('an id above the run\'s current one is 422 at ["header","last-event-id"] while the run works, and holds no stream place', async () => {
    const run = await workingRun();
    // As many as the key has places: each refused one must leave its place free.
    for (let i = 0; i < STREAMS_PER_KEY; i++) {
      assertAboveRefused(await stream(run.id, { 'last-event-id': String(run.seq + 1 + i * 1000) }), run.seq);
    }
    const open: OpenedStream[] = [];
    for (let i = 0; i < STREAMS_PER_KEY; i++) {
      const opened = await stream(run.id);
      assert.equal(opened.status, 200, `stream ${i + 1} of ${STREAMS_PER_KEY}: ${opened.body}`);
      open.push(opened);
    }
    await cancel(run.id);
    for (const o of open) await o.untilEnded();
    for (const o of open) assert.equal(o.events.at(-1)?.event, 'done');
  });

  test('an id above a final run\'s last one is the same 422; its own last id is 204', async () => {
    const run = await workingRun();
    await cancel(run.id);
    const last = await eventSeq(run.id);
    assertAboveRefused(await stream(run.id, { 'last-event-id': String(last + 1) }), last);
    const seen = await stream(run.id, { 'last-event-id': String(last) });
    assert.equal(seen.status, 204);
  });

  test('resumed from the current id: nothing until the run changes, then done, and the stream ends', async () => {
    const run = await workingRun();
    const resumed = await stream(run.id, { 'last-event-id': String(run.seq) });
    assert.equal(resumed.status, 200);
    await cancel(run.id);
    await resumed.untilEnded();
    assert.deepEqual(
      resumed.events.map((e) => e.event),
      ['done'],
    );
    assert.ok(Number(resumed.events[0]?.id) > run.seq);
  });

  test('resumed from an earlier id: the run as it is at once, done when it is final, and the stream ends', async () => {
    const run = await workingRun();
    assert.ok(run.seq > 1, `a running run has changed since it was queued (seq ${run.seq})`);
    const resumed = await stream(run.id, { 'last-event-id': '1' });
    assert.equal(resumed.status, 200);
    const now = await resumed.next(() => true, 'the run as it is');
    assert.equal(now.event, 'status');
    assert.equal(Number(now.id), run.seq);
    await cancel(run.id);
    await resumed.untilEnded();
    assert.equal(resumed.events.at(-1)?.event, 'done');
  });

  test('without Last-Event-ID, and with id 0: the run as it is, then done when the run is canceled, and the stream ends', async () => {
    const run = await workingRun();
    const fresh = await stream(run.id);
    const zero = await stream(run.id, { 'last-event-id': '0' });
    for (const o of [fresh, zero]) await o.next((e) => e.event === 'status', 'the first status');
    await cancel(run.id);
    for (const o of [fresh, zero]) {
      await o.untilEnded();
      assert.deepEqual(
        o.events.map((e) => [e.event, Number(e.id)]),
        [
          ['status', run.seq],
          ['done', run.seq + 1],
        ],
      );
    }
  });
});
