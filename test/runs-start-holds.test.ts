import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ledgerDrift } from '../src/sparks/ledger.js';
import { assertError } from './helpers/error-envelope.js';
import { makeTeam } from './helpers/fixtures.js';
import { makeMp4, makePng } from './helpers/media.js';
import { estimate, finalRun, runOf, sparksOnMe, start, teamState, uploadReady, type EstimateJson, type RunJson } from './helpers/runs.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { testRegistry } from './helpers/test-tools.js';
import { startTestWorker } from './helpers/worker.js';

/** Prices and holds: estimate writes nothing and equals the run's cost; holds never overdraw. */

const tools = testRegistry();
let s: TestServer;
let png: Buffer;
const db = () => s.database.db;

async function ledgerOf(runId: string): Promise<{ kind: string; amount: number }[]> {
  const { rows } = await db().pool.query<{ kind: string; amount: number }>(
    'SELECT kind, amount FROM ledger_entries WHERE run_id = $1::uuid ORDER BY kind',
    [runId],
  );
  return rows;
}

async function globalCounts(): Promise<{ runs: number; ledger: number; events: number }> {
  const { rows } = await db().pool.query<{ runs: number; ledger: number; events: number }>(
    `SELECT (SELECT count(*) FROM runs)::integer AS runs, (SELECT count(*) FROM ledger_entries)::integer AS ledger,
            (SELECT count(*) FROM run_events)::integer AS events`,
  );
  assert.ok(rows[0]);
  return rows[0];
}

before(async () => {
  s = await startTestServer({ tools, env: { TOOLRUN_WORKER_POLL_MS: '200' } });
  png = await makePng(1600, 1200);
});
after(() => s.close());

describe('estimate', () => {
  test('writes nothing, whatever it is asked', async () => {
    const team = await makeTeam(db(), { plan: 'pro', sparks: 50 });
    const file = await uploadReady(s, team.key, png, 'a.png', 'image/png');
    const before = { team: await teamState(db().pool, team.teamId), all: await globalCounts() };
    const ok = await estimate(s, team.key, 'test_copy', { inputs: { image: [file], copies: 2 } });
    assert.equal(ok.statusCode, 200, ok.body);
    const est = ok.json<EstimateJson>();
    assert.deepEqual(est, { object: 'estimate', tool_id: 'test_copy', product_id: 'test_copy', sparks: 4, reserve_sparks: 4 });
    assertError(await estimate(s, team.key, 'test_copy', { inputs: { image: [file], mode: 'x' } }), 422, 'invalid_request');
    const poor = await makeTeam(db(), { plan: 'pro', sparks: 1 });
    assertError(await estimate(s, poor.key, 'video_upscale', { duration_seconds: 60 }), 402, 'insufficient_sparks');
    assertError(await estimate(s, poor.key, 'video_transition', { duration_seconds: 60 }), 402, 'insufficient_sparks');
    await Promise.all(Array.from({ length: 10 }, () => estimate(s, team.key, 'image_upscale', { inputs: { image: [file] } })));
    assert.deepEqual(await teamState(db().pool, team.teamId), before.team);
    assert.equal(await sparksOnMe(s, team.key), 50);
    const all = await globalCounts();
    assert.deepEqual({ ...all, ledger: all.ledger - 1 }, before.all, 'only the poor team was granted Sparks');
  });

  test("equals a successful run's final cost; the start holds reserve_sparks, visible at once on /v1/me", async () => {
    const team = await makeTeam(db(), { plan: 'pro', sparks: 40 });
    const file = await uploadReady(s, team.key, png, 'a.png', 'image/png');
    const body = { inputs: { image: [file], copies: 2 } };
    const est = (await estimate(s, team.key, 'test_copy', body)).json<EstimateJson>();
    assert.ok(est.reserve_sparks >= est.sparks);
    const res = await start(s, team.key, 'test_copy', body);
    const run = runOf(res);
    assert.equal(res.headers['idempotent-replayed'], undefined);
    assert.equal(run.status, 'queued');
    assert.equal(run.tool_id, 'test_copy');
    assert.equal(run.product_id, 'test_copy');
    assert.equal(run.cost_sparks, est.reserve_sparks);
    assert.equal(run.api_key_id, team.keyId);
    assert.equal(run.progress, 0);
    assert.deepEqual(run.outputs, []);
    assert.equal(run.error, null);
    assert.equal(run.started_at, null);
    assert.equal(run.finished_at, null);
    assert.ok(run.created_at && Math.abs(Date.parse(run.created_at) - Date.now()) < 60_000, `created_at ${run.created_at}`);
    assert.equal(await sparksOnMe(s, team.key), 40 - est.reserve_sparks);

    const worker = await startTestWorker(s, tools);
    try {
      const done = await finalRun(s, team.key, run.id);
      assert.equal(done.status, 'succeeded', done.error ?? '');
      assert.equal(done.cost_sparks, est.sparks);
      assert.equal(done.outputs.length, 2);
    } finally {
      await worker.stop(1000);
    }
    assert.equal(await sparksOnMe(s, team.key), 40 - est.sparks);
    assert.deepEqual(await ledgerOf(run.id), [
      { kind: 'charge', amount: -est.sparks },
      { kind: 'hold', amount: -est.reserve_sparks },
      { kind: 'release', amount: est.reserve_sparks },
    ]);
    assert.deepEqual(await ledgerDrift(db().pool), []);
  });

  test('duration_seconds prices a metered video tool before its file is known; a given file\'s probed length wins', async () => {
    const team = await makeTeam(db(), { plan: 'pro', sparks: 1000 });
    const price = async (tool: string, body: unknown) => {
      const res = await estimate(s, team.key, tool, body);
      assert.equal(res.statusCode, 200, res.body);
      return res.json<EstimateJson>().sparks;
    };
    // A length alone prices video_upscale as its target's reference clip at 30 fps (1280x720 to
    // 1080p, 1920x1080 to 4K): per started 10 s, 2 Sparks to 1080p, 6 to 4k, with lanczos.
    assert.equal(await price('video_upscale', { inputs: { method: 'lanczos' }, duration_seconds: 25 }), 6);
    assert.equal(await price('video_upscale', { inputs: { target: '4k', method: 'lanczos' }, duration_seconds: 25 }), 18);
    // 2 Sparks per clip (at least 2 clips) plus 1 per started 10 s.
    assert.equal(await price('video_transition', { inputs: { style: 'wipe_left' }, duration_seconds: 35 }), 8);
    // Without the hint the file is required; a start always needs it.
    const missing = assertError(await estimate(s, team.key, 'video_upscale', {}), 422, 'invalid_request');
    assert.deepEqual(missing.errors?.map((e) => [e.loc, e.code]), [[['body', 'inputs', 'video'], 'missing']]);
    // Without the hint the files are required; a start always needs them.
    const noClips = assertError(await estimate(s, team.key, 'video_transition', {}), 422, 'invalid_request');
    assert.deepEqual(noClips.errors?.map((e) => [e.loc, e.code]), [[['body', 'inputs', 'clips'], 'missing']]);
    const startMissing = assertError(await start(s, team.key, 'video_upscale', { duration_seconds: 25 }), 422, 'invalid_request');
    assert.deepEqual(startMissing.errors?.map((e) => [e.loc, e.code]), [[['body', 'inputs', 'video'], 'missing']]);
    // The hint prices only video: an image tool still needs its image.
    assertError(await estimate(s, team.key, 'image_upscale', { duration_seconds: 25 }), 422, 'invalid_request');

    const mp4 = await makeMp4({ seconds: 1, width: 160, height: 120, audio: false });
    const video = await uploadReady(s, team.key, mp4, 'a.mp4', 'video/mp4');
    assert.equal(await price('video_upscale', { inputs: { video: [video], method: 'lanczos' }, duration_seconds: 1000 }), 2);
    const run = runOf(await start(s, team.key, 'video_upscale', { inputs: { video: [video], method: 'lanczos' }, duration_seconds: 1000 }));
    assert.equal(run.cost_sparks, 2);
  });
});

describe('holds', () => {
  test('50 parallel starts against Sparks for 10: exactly 10 accepted, 40 refused with 402, never overdrawn', async () => {
    const team = await makeTeam(db(), { plan: 'pro', sparks: 30, rate: 300 });
    const small = await uploadReady(s, team.key, await makePng(640, 480), 'a.png', 'image/png');
    const body = { inputs: { image: [small] } };
    assert.equal((await estimate(s, team.key, 'test_copy', body)).json<EstimateJson>().reserve_sparks, 3);

    let lowest = Infinity;
    let burstDone = false;
    const watcher = (async () => {
      while (!burstDone) {
        lowest = Math.min(lowest, (await teamState(db().pool, team.teamId)).balance);
        await new Promise((r) => setImmediate(r));
      }
    })();
    const responses = await Promise.all(Array.from({ length: 50 }, () => start(s, team.key, 'test_copy', body)));
    burstDone = true;
    await watcher;

    const accepted = responses.filter((r) => r.statusCode === 202);
    const refused = responses.filter((r) => r.statusCode !== 202);
    assert.equal(accepted.length, 10);
    assert.equal(refused.length, 40);
    for (const r of refused) {
      const e = assertError(r, 402, 'insufficient_sparks');
      assert.deepEqual(e.details, { needed_sparks: 3, available_sparks: 0 });
    }
    const ids = new Set(accepted.map((r) => r.json<RunJson>().id));
    assert.equal(ids.size, 10);
    for (const r of accepted) assert.equal(r.json<RunJson>().status, 'queued');
    assert.ok(lowest >= 0, `balance went to ${lowest}`);
    assert.deepEqual(await teamState(db().pool, team.teamId), { balance: 0, runs: 10, ledger: 11, holds: 10 });
    assert.equal(await sparksOnMe(s, team.key), 0);
    assert.deepEqual(await ledgerDrift(db().pool), []);
  });
});
