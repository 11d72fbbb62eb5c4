// The run engine's guarantees with in-process workers against a real PostgreSQL: progress and
// timestamps, NOTIFY wake-ups, cancel (alone and racing with completion), time limits, tool
// errors, and the output check. Leases and graceful stop: runs-engine-leases.test.ts; real
// worker processes killed mid-run: runs-crash.test.ts. The two suites run side by side, each on
// its own server and database.
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { createLogger } from '../src/logger.js';
import { resolveMediaBinaries } from '../src/media/binaries.js';
import { verifyOutputs } from '../src/runs/output-checks.js';
import { storeOutputs } from '../src/runs/outputs.js';
import { ToolError } from '../src/tools/manifest.js';
import {
  assertSettledOnce,
  engineSuite,
  FINAL,
  runState,
  seededRandom,
  TeamClient,
  waitFinal,
  waitFor,
  workDirs,
  type RunBody,
} from './helpers/runs-harness.js';
import { makePng } from './helpers/media.js';

/** A deliberate random pause to place a cancel at a random moment (not a wait for a condition). */
const jitter = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('run engine (in-process workers)', { concurrency: true }, () => {
  engineSuite('progress, cancel, limits, tool errors, outputs', (e) => {
    test('progress rises while a slow run works; started_at once running, finished_at once final', async () => {
      const c = await TeamClient.create(e.s);
      await e.workers.start({ concurrency: 1 });
      const run = await c.start('slow');
      assert.equal(run.started_at, null);
      const seen: number[] = [];
      const done = await waitFor(
        'the slow run to finish',
        async () => {
          const r = await c.get(run.id);
          if (r.status === 'running') {
            assert.ok(r.started_at, 'a running run has started_at');
            assert.equal(r.finished_at, null);
            seen.push(r.progress);
          }
          return FINAL.includes(r.status) ? r : undefined;
        },
        15_000,
        100,
      );
      assert.equal(done.status, 'succeeded', done.error ?? '');
      assert.equal(done.progress, 1);
      assert.ok(done.started_at && done.finished_at && done.started_at <= done.finished_at);
      assert.ok(seen.some((p) => p > 0 && p < 1), `a value strictly between 0 and 1 was seen: ${seen.join(', ')}`);
      for (let i = 1; i < seen.length; i++) assert.ok(seen[i]! >= seen[i - 1]!, `progress never falls: ${seen.join(', ')}`);
    });

    test('cancel of a running tool stops it within 1 s and leaves no partial output', async () => {
      const c = await TeamClient.create(e.s);
      const w = await e.workers.start({ concurrency: 1 });
      const run = await c.start('hang');
      // Running, and past the start of its execution (the working directory is made first).
      await waitFor('the tool to be running', async () =>
        w.busy === 1 && (await runState(e.db(), run.id)).status === 'running' && workDirs(run.id).length === 1 ? true : undefined,
      );
      const res = await c.api('POST', `/v1/runs/${run.id}/cancel`);
      assert.equal(res.status, 200);
      const body = (await res.json()) as RunBody;
      assert.equal(body.status, 'canceled');
      assert.equal(body.cost_sparks, 0);
      // The spec'd bound: the tool stops within 1 second of the cancel.
      await waitFor('the worker to stop the tool', async () => (w.busy === 0 ? true : undefined), 1000, 10);
      assert.deepEqual(workDirs(run.id), [], 'the working directory with partial output is gone');
      assert.deepEqual(c.storedObjects(run.id), [], 'no stored outputs');
      await assertSettledOnce(e.db(), await runState(e.db(), run.id));
      const again = await c.api('POST', `/v1/runs/${run.id}/cancel`);
      assert.equal(again.status, 200, 'cancel of a canceled run is safe to retry');
    });

    test('a tool over its time limit fails with an error naming the limit; hold released', async () => {
      const c = await TeamClient.create(e.s);
      await e.workers.start({ concurrency: 1, env: { TOOLRUN_RUN_TIMEOUT_SECONDS: '1' } });
      const run = await c.start('hang');
      const done = await waitFinal(e.db(), run.id, 10_000);
      assert.equal(done.status, 'failed');
      assert.match(done.error ?? '', /longer than the 1 s limit/);
      await assertSettledOnce(e.db(), done);
      await waitFor('the working directory to be removed', async () => (workDirs(run.id).length === 0 ? true : undefined), 2000);
    });

    test('an unexpected tool error fails generically; unreadable output fails as such', async () => {
      const c = await TeamClient.create(e.s);
      await e.workers.start({ concurrency: 2 });
      const crash = await c.start('crash');
      const garbage = await c.start('garbage', { copies: 2 });
      const crashed = await waitFinal(e.db(), crash.id);
      assert.equal(crashed.status, 'failed');
      assert.equal(crashed.error, 'The tool failed unexpectedly; the run can be retried.');
      const body = await c.get(crash.id);
      assert.doesNotMatch(JSON.stringify(body), /internal detail|at .*\.ts:\d+/, 'neither the thrown message nor a stack reaches the API');
      const bad = await waitFinal(e.db(), garbage.id);
      assert.equal(bad.status, 'failed');
      assert.match(bad.error ?? '', /^the tool produced an unreadable output/);
      assert.doesNotMatch(bad.error ?? '', /\/tmp|toolrun-run-/, 'no server paths in the error');
      for (const r of [crashed, bad]) await assertSettledOnce(e.db(), r);
      assert.deepEqual(c.storedObjects(garbage.id), []);
    });

    test('storing outputs: when a later output is unreadable, the ones already stored are deleted', async () => {
      const c = await TeamClient.create(e.s);
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-engine-'));
      try {
        fs.writeFileSync(path.join(dir, 'good.png'), await makePng(64, 48));
        fs.writeFileSync(path.join(dir, 'bad.png'), 'not an image');
        const runId = randomUUID();
        const outputs = ['good.png', 'bad.png'].map((f) => ({ path: path.join(dir, f), fileName: f, mimeType: 'image/png' }));
        const opts = { teamId: c.team.teamId, runId, storage: e.s.storage, media: resolveMediaBinaries(), maxBytes: 1 << 30 };
        await assert.rejects(storeOutputs(outputs, opts), (err: Error) => err instanceof ToolError && /unreadable output/.test(err.message));
        assert.deepEqual(c.storedObjects(runId), [], 'the first, good output was not left behind');
        const stopped = new AbortController();
        stopped.abort('canceled');
        await assert.rejects(storeOutputs(outputs.slice(0, 1), { ...opts, signal: stopped.signal }));
        assert.deepEqual(c.storedObjects(runId), [], 'nothing stored once the run was stopped');
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    test('outputs the encoder vouches for: held to its report (length, type, header size), its checksum recorded', async () => {
      const c = await TeamClient.create(e.s);
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-engine-'));
      try {
        const png = await makePng(64, 48);
        const file = path.join(dir, 'out.png');
        const vouched = { bytes: png.length, sha256: createHash('sha256').update(png).digest('hex'), width: 64, height: 48 };
        const opts = { teamId: c.team.teamId, runId: randomUUID(), storage: e.s.storage, media: resolveMediaBinaries(), maxBytes: 1 << 30 };
        const store = (encoded: typeof vouched, mimeType = 'image/png') => {
          fs.writeFileSync(file, png);
          return storeOutputs([{ path: file, fileName: 'out.png', mimeType, encoded }], opts);
        };
        const unreadable = (err: Error) => err instanceof ToolError && /unreadable output|bytes its encoder made/.test(err.message);
        await assert.rejects(store({ ...vouched, bytes: png.length + 1 }), unreadable, 'a file shorter than the encoder made');
        await assert.rejects(store({ ...vouched, width: 65 }), unreadable, 'a header of another size');
        await assert.rejects(store(vouched, 'image/jpeg'), unreadable, 'another type than claimed');
        assert.deepEqual(c.storedObjects(opts.runId), [], 'nothing stored from a refused output');
        const [stored] = await store(vouched);
        assert.equal(stored?.sha256, vouched.sha256);
        assert.deepEqual([stored?.width, stored?.height, stored?.sizeBytes], [64, 48, png.length]);
        assert.equal(c.storedObjects(opts.runId).length, 1);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    test('outputs: 409 output_not_ready until checked, then 200; a failed check answers 404 output_not_found', async () => {
      const c = await TeamClient.create(e.s);
      await e.workers.start({ concurrency: 1 });
      const run = await c.start('ok', { copies: 2 });
      assert.equal((await waitFinal(e.db(), run.id)).status, 'succeeded');
      const outs = (await c.get(run.id)).outputs;
      assert.equal(outs.length, 2);
      const url = (assetId: string) => c.api('GET', `/v1/runs/${run.id}/outputs/${assetId}/url`);
      const first = await url(outs[0]!.asset_id);
      if (first.status !== 200) {
        assert.equal(first.status, 409);
        assert.equal(((await first.json()) as { error: { code: string } }).error.code, 'output_not_ready');
      }
      for (const o of outs) {
        await waitFor('the output check', async () => ((await url(o.asset_id)).status === 200 ? true : undefined), 10_000, 50);
      }
      // Back to 'checking' (as a crash between store and check leaves it): not ready, deterministically.
      const [a, b] = [outs[0]!.asset_id, outs[1]!.asset_id];
      await e.db().query(`UPDATE run_outputs SET status = 'checking' WHERE run_id = $1::uuid`, [run.id]);
      const notReady = await url(a);
      assert.equal(notReady.status, 409);
      assert.equal(((await notReady.json()) as { error: { code: string } }).error.code, 'output_not_ready');
      // a: its stored bytes altered after the checksum was taken; b: a recorded checksum that is wrong.
      const { rows } = await e.db().query<{ storage_key: string }>(`SELECT storage_key FROM run_outputs WHERE id = $1::uuid`, [a]);
      fs.appendFileSync(e.s.localStorage().objectPath(rows[0]!.storage_key), Buffer.from('tampered'));
      await e.db().query(`UPDATE run_outputs SET sha256 = repeat('0', 64) WHERE id = $1::uuid`, [b]);
      const checked = await verifyOutputs(e.s.database.db, e.s.storage, createLogger('silent'), { runId: run.id });
      assert.equal(checked, 2, 'both outputs were checked');
      const statuses = await e.db().query<{ status: string }>(`SELECT status FROM run_outputs WHERE run_id = $1::uuid ORDER BY position`, [run.id]);
      assert.deepEqual(
        statuses.rows.map((r) => r.status),
        ['failed', 'failed'],
      );
      for (const id of [a, b]) {
        const res = await url(id);
        assert.equal(res.status, 404);
        assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'output_not_found');
      }
    });
  });

  engineSuite('wake-ups and cancel races', (e) => {
    test('workers are woken by NOTIFY: with a 60 s poll, runs still start at once', async () => {
      const c = await TeamClient.create(e.s);
      // A 60 s lease too, so no lease sweep wakes the worker either: only notifications can.
      await e.workers.start({ concurrency: 1, env: { TOOLRUN_WORKER_POLL_MS: '60000', TOOLRUN_LEASE_SECONDS: '60' } });
      const first = await c.start('ok');
      await waitFor('the run to be taken', async () => ((await runState(e.db(), first.id)).status !== 'queued' ? true : undefined), 3000);
      // Each next run is started the moment the previous one succeeds, i.e. while the worker is
      // still winding that one down and looking for more: no notification may be lost meanwhile.
      let prev = first.id;
      for (let i = 0; i < 30; i++) {
        await waitFor(`run ${i} to succeed`, async () => ((await runState(e.db(), prev)).status === 'succeeded' ? true : undefined), 3000, 5);
        prev = (await c.start('ok')).id;
      }
      assert.equal((await waitFinal(e.db(), prev, 3000)).status, 'succeeded');
    });

    test('cancel racing with completion: exactly one final state and one event per run', async (t) => {
      const c = await TeamClient.create(e.s);
      const ws = [await e.workers.start({ concurrency: 2 }), await e.workers.start({ concurrency: 2 })];
      // How long a run lives here under this load (four at once, as below), so that the cancels
      // land all over a run's life (queued, running, storing outputs, settling, done) on a fast or
      // a slow machine alike.
      const probes = await Promise.all(Array.from({ length: 4 }, () => c.start('ok', { copies: 2 })));
      for (const p of probes) await waitFinal(e.db(), p.id);
      const { rows } = await e.db().query<{ ms: number }>(
        `SELECT avg(extract(epoch FROM finished_at - created_at)) * 1000 AS ms FROM runs WHERE id = ANY ($1::uuid[])`,
        [probes.map((p) => p.id)],
      );
      const life = Math.max(50, Math.round(Number(rows[0]?.ms ?? 200)));
      const seed = Date.now();
      const rnd = seededRandom(seed);
      // Four lanes (one per worker slot), four runs each: start, cancel at a random moment, next.
      const lanes = await Promise.all(
        Array.from({ length: 4 }, async () => {
          const out: { id: string; code: number; body: { status?: string; error?: { code: string; details?: { status: string } } } }[] = [];
          for (let i = 0; i < 4; i++) {
            const run = await c.start('ok', { copies: 2 });
            await jitter(Math.floor(rnd() * life * 1.5));
            const res = await c.api('POST', `/v1/runs/${run.id}/cancel`);
            out.push({ id: run.id, code: res.status, body: (await res.json()) as (typeof out)[number]['body'] });
            await waitFinal(e.db(), run.id);
          }
          return out;
        }),
      );
      await waitFor('the workers to be idle', async () => (ws.every((w) => w.busy === 0) ? true : undefined));
      const counts: Record<string, number> = {};
      for (const r of lanes.flat()) {
        const final = await waitFinal(e.db(), r.id);
        counts[final.status] = (counts[final.status] ?? 0) + 1;
        const msg = `run ${r.id} (seed ${seed}, life ${life} ms): cancel answered ${r.code} ${JSON.stringify(r.body)}, final ${final.status}`;
        if (r.code === 200) {
          assert.equal(r.body.status, 'canceled', msg);
          assert.equal(final.status, 'canceled', msg);
          assert.deepEqual((await c.get(r.id)).outputs, [], msg);
          assert.deepEqual(c.storedObjects(r.id), [], `no stored outputs of a canceled run: ${msg}`);
        } else {
          assert.equal(r.code, 409, msg);
          assert.equal(r.body.error?.code, 'run_not_cancelable', msg);
          assert.equal(r.body.error?.details?.status, 'succeeded', msg);
          assert.equal(final.status, 'succeeded', msg);
          assert.equal((await c.get(r.id)).outputs.length, 2, msg);
        }
        await assertSettledOnce(e.db(), final);
      }
      t.diagnostic(`seed ${seed}, run life ${life} ms: ${JSON.stringify(counts)}`);
    });
  });
});
