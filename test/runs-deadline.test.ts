// Cancel-After on POST /v1/tools/{id}/runs (issue 18): a run not final by its deadline is canceled
// by the workers' sweep, running (its tool stopped) or still queued, with its hold released, a
// run.canceled event written and an error that says why; a run that finishes in time is not
// touched; a bad value is a 422 on ["header","Cancel-After"] with nothing written. Real server,
// real worker, the test tool.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Toolrun } from '@toolrun/sdk';
import type { RunWorker } from '../src/runs/worker.js';
import { assertError } from './helpers/error-envelope.js';
import { uploadReadyFile } from './helpers/faults.js';
import { bearer, makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { makePng } from './helpers/media.js';
import { assertSettledOnce, runState } from './helpers/runs-harness.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { socketRequest } from './helpers/socket-request.js';
import { testRegistry } from './helpers/test-tools.js';
import { startTestWorker, waitFor } from './helpers/worker.js';

let s: TestServer;
let worker: RunWorker;

before(async () => {
  s = await startTestServer({ tools: testRegistry(), env: { TOOLRUN_WORKER_POLL_MS: '200', TOOLRUN_LEASE_SECONDS: '3' } });
  worker = await startTestWorker(s, testRegistry(), { concurrency: 1 });
});
after(async () => {
  await worker.stop(1000);
  await s.close();
});

interface RunJson {
  id: string;
  status: string;
  error: string | null;
  cost_sparks: number;
}

async function start(team: TeamFixture, fileId: string, mode: string, cancelAfter?: string) {
  return socketRequest(s.url, '/v1/tools/test_copy/runs', {
    method: 'POST',
    headers: { ...bearer(team.key), 'content-type': 'application/json', ...(cancelAfter !== undefined ? { 'cancel-after': cancelAfter } : {}) },
    body: JSON.stringify({ inputs: { image: [fileId], mode } }),
  });
}

/** Waits in the database (polling the API would spend the key's rate), then reads the run once through the API. */
async function final(team: TeamFixture, id: string): Promise<RunJson> {
  await waitFor(`run ${id} to end`, async () => (['succeeded', 'failed', 'canceled'].includes((await runState(s.database.db.pool, id)).status) ? true : undefined));
  const res = await socketRequest(s.url, `/v1/runs/${id}`, { headers: bearer(team.key) });
  assert.equal(res.statusCode, 200, res.body);
  return res.json<RunJson>();
}

async function setup(): Promise<{ team: TeamFixture; fileId: string }> {
  const team = await makeTeam(s.database.db, { sparks: 1000, rate: 300 });
  return { team, fileId: await uploadReadyFile(s.url, team.key, await makePng(32, 32), 'a.png', 'image/png') };
}

describe('Cancel-After', () => {
  test('a running run past its deadline and one still queued behind it are canceled with their holds released; one that finishes in time is not', async () => {
    const { team, fileId } = await setup();
    // The worker takes one run at a time: the hanging one runs, the second waits in the queue.
    const running = await start(team, fileId, 'hang', '2');
    assert.equal(running.statusCode, 202, running.body);
    const runningId = running.json<RunJson>().id;
    await waitFor('the first run to be running', async () => ((await runState(s.database.db.pool, runningId)).status === 'running' ? true : undefined));
    const queuedId = (await start(team, fileId, 'ok', '1s')).json<RunJson>().id;

    for (const id of [runningId, queuedId]) {
      const done = await final(team, id);
      assert.equal(done.status, 'canceled');
      assert.match(done.error ?? '', /Cancel-After deadline/);
      assert.equal(done.cost_sparks, 0);
      const state = await runState(s.database.db.pool, id);
      await assertSettledOnce(s.database.db.pool, state);
      const { rows } = await s.database.db.pool.query<{ type: string }>('SELECT type FROM run_events WHERE run_id = $1::uuid', [id]);
      assert.deepEqual(rows.map((r) => r.type), ['run.canceled']);
    }
    // The worker stopped the hanging tool: it takes the next run.
    const inTime = await start(team, fileId, 'ok', '1h');
    assert.equal(inTime.statusCode, 202, inTime.body);
    const done = await final(team, inTime.json<RunJson>().id);
    assert.equal(done.status, 'succeeded');
    assert.equal(done.error, null);
  });

  test('the SDK sends cancelAfter', async () => {
    const { team, fileId } = await setup();
    const client = new Toolrun({ apiKey: team.key, baseUrl: s.url });
    const run = await client.runs.start('test_copy', { inputs: { image: [fileId], mode: 'hang' } }, { cancelAfter: '1s' });
    const done = await final(team, run.id);
    assert.equal(done.status, 'canceled');
    assert.match(done.error ?? '', /Cancel-After deadline/);
  });

  test('a value that is not a duration, zero, or past 24 hours is a 422 on ["header","Cancel-After"]; nothing is written or held', async () => {
    const { team, fileId } = await setup();
    for (const bad of ['soon', '0', '0s', '24h1s', '86401', '1.5h', '-5', '1m1h']) {
      const e = assertError(await start(team, fileId, 'ok', bad), 422, 'invalid_request');
      assert.deepEqual((e.errors ?? []).map((x) => x.loc), [['header', 'Cancel-After']], bad);
    }
    // With a bad body too: both reported at once.
    const both = await socketRequest(s.url, '/v1/tools/test_copy/runs', {
      method: 'POST',
      headers: { ...bearer(team.key), 'content-type': 'application/json', 'cancel-after': 'later' },
      body: JSON.stringify({ inputs: { image: [fileId], mode: 'nope' } }),
    });
    const e = assertError(both, 422, 'invalid_request');
    assert.deepEqual(new Set((e.errors ?? []).map((x) => JSON.stringify(x.loc))), new Set([JSON.stringify(['header', 'Cancel-After']), JSON.stringify(['body', 'inputs', 'mode'])]));
    const { rows } = await s.database.db.pool.query<{ n: number; sparks: number }>(
      'SELECT (SELECT count(*)::integer FROM runs WHERE team_id = $1::uuid) AS n, sparks_available AS sparks FROM teams WHERE id = $1::uuid',
      [team.teamId],
    );
    assert.deepEqual(rows[0], { n: 0, sparks: 1000 });
    for (const good of ['1', '90', '1h30m', '10m', '45s', '24h', '86400']) {
      const res = await start(team, fileId, 'ok', good);
      assert.equal(res.statusCode, 202, `${good}: ${res.body}`);
    }
  });
});
