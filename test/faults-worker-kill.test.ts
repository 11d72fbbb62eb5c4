// Fault: kill -9 of a real `toolrun worker` process (the real tool registry) in the middle of each
// of the five real tools. The API runs in this process; workers are separate OS processes on the
// same database and storage root. Each test catches its run mid-work (sharp working, the tool's
// ffmpeg child encoding, the brand page being fetched), SIGKILLs the worker, and lets the next
// worker take the run back once its 3 s lease lapses: the run ends succeeded once, its Sparks
// balance, no output of the killed attempt is left in storage, and no ffmpeg child of the dead
// worker lingers. The replacement worker then serves the next test (one start-up per test).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { api, assertTeamBalanced, childrenOf, HoldSite, startToolrunWorker, uploadReadyFile, workerIdOf } from './helpers/faults.js';
import { killLiveChildren, pidGone, type CliProcess } from './helpers/process.js';
import { assertSettledOnce, runState, waitFinal, waitFor, type RunState } from './helpers/runs-harness.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { makeClip, makePatternClip, probe } from './helpers/videos.js';

const LEASE = { TOOLRUN_LEASE_SECONDS: '3', TOOLRUN_WORKER_POLL_MS: '500', TOOLRUN_ALLOW_PRIVATE_NETWORK: '1' };

let s: TestServer;
let team: TeamFixture;
let site: HoldSite;
let mediaDir: string;
/** The live worker; each test kills it and its replacement serves the next test. */
let worker: CliProcess;
const files: Record<string, string> = {};

function workerEnv(): Record<string, string> {
  return {
    ...LEASE,
    DATABASE_URL: s.database.url,
    TOOLRUN_DATA_DIR: s.config.dataDir,
    PUBLIC_BASE_URL: s.url,
    TOOLRUN_WORKER_CONCURRENCY: '1',
  };
}

before(async () => {
  s = await startTestServer({ env: LEASE });
  team = await makeTeam(s.database.db, { sparks: 100_000, rate: 300, plan: 'pro' });
  site = await new HoldSite().start();
  mediaDir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-faults-media-'));
  const [w] = await Promise.all([
    startToolrunWorker(workerEnv()),
    (async () => {
      // Big enough that sharp works for a while after the tool reports its first progress.
      const big = await sharp({ create: { width: 4000, height: 4000, channels: 3, background: '#3a6ea5' } }).jpeg({ quality: 85 }).toBuffer();
      files.image = await uploadReadyFile(s.url, team.key, big, 'big.jpg', 'image/jpeg');
      // Long enough that ffmpeg is still encoding when the worker dies.
      const pattern = await makePatternClip(mediaDir, 'pattern.mp4', { width: 640, height: 360, seconds: 6, fps: 25 });
      files.video = await uploadReadyFile(s.url, team.key, fs.readFileSync(pattern), 'pattern.mp4', 'video/mp4');
      for (const [name, color] of [['red', 'red'], ['blue', 'blue']] as const) {
        const clip = await makeClip(mediaDir, `${name}.mp4`, { color, width: 1280, height: 720, seconds: 4, fps: 25, tone: 440 });
        files[name] = await uploadReadyFile(s.url, team.key, fs.readFileSync(clip), `${name}.mp4`, 'video/mp4');
      }
    })(),
  ]);
  worker = w;
}, { timeout: 240_000 });

after(async () => {
  killLiveChildren();
  await site?.close();
  await s?.close();
  if (mediaDir) fs.rmSync(mediaDir, { recursive: true, force: true });
}, { timeout: 60_000 });

const db = () => s.database.db.pool;

/** ffmpeg/ffprobe children of a process. */
const mediaChildren = (pid: number) => childrenOf(pid).filter((p) => /^ff(mpeg|probe)/.test(p.comm));

/** The storage keys of a run's recorded outputs, and the objects under its output prefix. */
async function storedVsRecorded(runId: string): Promise<{ stored: string[]; recorded: string[] }> {
  const { rows } = await db().query<{ storage_key: string }>(`SELECT storage_key FROM run_outputs WHERE run_id = $1::uuid`, [runId]);
  const dir = path.join(s.config.dataDir, 'storage', 'objects', 'outputs', team.teamId, runId);
  const stored = fs.existsSync(dir) ? fs.readdirSync(dir).sort() : [];
  return { stored, recorded: rows.map((r) => path.basename(r.storage_key)).sort() };
}

/**
 * Starts a run of `tool`, waits until the live worker holds it and `midway` says the tool is in
 * the middle of its work, SIGKILLs the worker, starts a replacement, and checks the outcome.
 */
async function killMidRun(
  tool: string,
  inputs: Record<string, unknown>,
  midway: (victim: CliProcess, r: RunState) => boolean,
  opts: { ffmpeg?: boolean } = {},
): Promise<string> {
  const victim = worker;
  const victimId = workerIdOf(victim);
  const res = await api<{ id: string; status: string }>(s.url, team.key, 'POST', `/v1/tools/${tool}/runs`, { inputs });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  const runId = res.body.id;
  await waitFor(
    `${tool} run ${runId} to be mid-work in ${victimId}`,
    async () => {
      const r = await runState(db(), runId);
      assert.ok(!['succeeded', 'failed', 'canceled'].includes(r.status), `the run ended before the kill: ${r.status} ${r.error ?? ''}`);
      return r.status === 'running' && r.lease_owner?.startsWith(`${victimId}/`) && midway(victim, r) ? true : undefined;
    },
    60_000,
    20,
  );
  const orphans = mediaChildren(victim.pid);
  if (opts.ffmpeg) assert.ok(orphans.some((p) => p.comm.startsWith('ffmpeg')), 'the worker was killed while its ffmpeg ran');
  const exit = await victim.stop('SIGKILL', 10_000);
  const killedAt = Date.now();
  assert.equal(exit.signal, 'SIGKILL');
  // The dead worker's ffmpeg dies with it (its parent-death signal); none lingers.
  const gone = Promise.all(
    orphans.map((p) => waitFor(`orphaned ${p.comm} ${p.pid} to exit`, async () => (pidGone(p.pid) ? Date.now() - killedAt : undefined), 15_000, 20)),
  );
  // The replacement comes up while the dead worker's lease lapses.
  worker = await startToolrunWorker(workerEnv());
  const orphanMs = await gone;

  const done = await waitFinal(db(), runId, 120_000);
  assert.equal(done.status, 'succeeded', done.error ?? '');
  assert.equal(done.attempts, 2, 'the killed attempt and the one that finished');
  await assertSettledOnce(db(), done);
  await assertTeamBalanced(db(), team.teamId);
  const finishedBy = (p: CliProcess) => p.logs().filter((l) => l.msg === 'run succeeded' && l.run_id === runId).length;
  assert.equal(finishedBy(victim), 0, 'the killed worker finished nothing');
  // Its log line is written just after the commit and read from a pipe: wait for it.
  await waitFor('the replacement to log the run it finished', async () => (finishedBy(worker) > 0 ? true : undefined), 10_000);
  assert.equal(finishedBy(worker), 1, 'the replacement finished it once');
  const run = await api<{ status: string; outputs: unknown[]; progress: number }>(s.url, team.key, 'GET', `/v1/runs/${runId}`);
  assert.equal(run.body.status, 'succeeded');
  assert.equal(run.body.progress, 1);
  assert.ok(run.body.outputs.length >= 1);
  const { stored, recorded } = await storedVsRecorded(runId);
  assert.equal(recorded.length, run.body.outputs.length);
  assert.deepEqual(stored, recorded, 'storage holds exactly the recorded outputs: nothing of the killed attempt');
  // The dead worker could not remove its working directory (the replacement removed its own).
  // An orphaned ffmpeg would have finished its output there; it was killed with its worker.
  const leftNow = () => fs.readdirSync(os.tmpdir()).filter((n) => n.startsWith(`toolrun-run-${runId}-`));
  // The replacement removes its own directory just after it settles the run: wait for that.
  const left = opts.ffmpeg ? await waitFor('the replacement to remove its working directory', async () => (leftNow().length <= 1 ? leftNow() : undefined), 15_000) : leftNow();
  if (opts.ffmpeg) {
    assert.equal(left.length, 1, 'the dead worker left its working directory');
    const dir = path.join(os.tmpdir(), left[0]!);
    const outputs = fs.readdirSync(dir).filter((n) => n.endsWith('.mp4'));
    assert.equal(outputs.length, 1, 'the orphaned ffmpeg had begun its output');
    await assert.rejects(probe(path.join(dir, outputs[0]!)), 'the orphaned ffmpeg was stopped before it could finish its output');
  }
  for (const d of left) fs.rmSync(path.join(os.tmpdir(), d), { recursive: true, force: true });
  return orphans.length ? `orphaned ${orphans.map((p) => p.comm).join(', ')} exited ${orphanMs.join(', ')} ms after the kill` : 'no child process';
}

describe('kill -9 of a toolrun worker in the middle of each real tool', { concurrency: 1, timeout: 600_000 }, () => {
  test('image_upscale: killed while sharp resamples', { timeout: 180_000 }, async () => {
    await killMidRun('image_upscale', { image: [files.image] }, (_, r) => r.progress > 0);
  });

  test('image_color_grade: killed while the pixels are graded', { timeout: 180_000 }, async () => {
    await killMidRun('image_color_grade', { image: [files.image], preset: 'warm_film', grain: 40 }, (_, r) => r.progress > 0.15);
  });

  // ffmpeg runs and has reported encoded time (past the probes' 0.02): its output file exists.
  const encoding = (v: CliProcess, r: RunState) => r.progress > 0.03 && mediaChildren(v.pid).some((p) => p.comm.startsWith('ffmpeg'));

  test('video_upscale: killed while its ffmpeg encodes', { timeout: 180_000 }, async (t) => {
    t.diagnostic(await killMidRun('video_upscale', { video: [files.video], target: '1080p' }, encoding, { ffmpeg: true }));
  });

  test('video_transition: killed while its ffmpeg encodes', { timeout: 180_000 }, async (t) => {
    const inputs = { clips: [files.red, files.blue], style: 'dissolve', duration_seconds: 1 };
    t.diagnostic(await killMidRun('video_transition', inputs, encoding, { ffmpeg: true }));
  });

  test('brand_kit_extract: killed while the page is being fetched', { timeout: 180_000 }, async () => {
    site.holding = true;
    const before = site.requests.length;
    await killMidRun('brand_kit_extract', { url: site.url }, () => {
      if (site.waiting === 0) return false;
      // From here on the site answers: the next attempt fetches the page at once.
      site.holding = false;
      return true;
    });
    site.release();
    const pages = site.requests.slice(before).filter((p) => p === '/');
    assert.equal(pages.length, 2, 'the page was fetched by the killed attempt and by the one that finished');
  });
});
