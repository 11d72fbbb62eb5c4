import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { resolveMediaBinaries } from '../src/media/binaries.js';
import { runFfmpeg } from '../src/media/ffmpeg.js';
import type { RunWorker } from '../src/runs/worker.js';
import { ToolError, type ToolOutput } from '../src/tools/manifest.js';
import { planTransition } from '../src/tools/video/transition-graph.js';
import { runTransition } from '../src/tools/video/transition.js';
import { runUpscale } from '../src/tools/video/upscale.js';
import { makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { assertFieldErrors, estimate, getRun, runOf, start, uploadReady, type EstimateJson, type RunJson } from './helpers/runs.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { testRegistry } from './helpers/test-tools.js';
import { ffmpegChildren, frameAt, makeClip, makePatternClip, packetsMd5, probe, processExists, videoRunContext, type FrameColours, type Rgb } from './helpers/videos.js';
import { startTestWorker, waitFor } from './helpers/worker.js';

const media = resolveMediaBinaries();
let dir: string;
const clip: Record<string, string> = {};

/** Two seconds at 25 fps: a frame is 0.04 s; durations are compared within two frames. */
const FRAME = 0.04;

function isRed(c: Rgb): boolean {
  return c.r > 220 && c.g < 30 && c.b < 30;
}
function isBlue(c: Rgb): boolean {
  return c.b > 220 && c.r < 30 && c.g < 30;
}
function show(f: FrameColours): string {
  const s = (c: Rgb) => `${Math.round(c.r)},${Math.round(c.g)},${Math.round(c.b)}`;
  return `all ${s(f.all)} left ${s(f.left)} centre ${s(f.centre)} right ${s(f.right)}`;
}

/** A RunContext as the executor builds it (helpers/videos.ts). */
const context = (slot: string, files: string[], values: Record<string, unknown>) => videoRunContext(dir, slot, files, values);

async function transition(files: string[], values: Record<string, unknown>): Promise<{ out: ToolOutput; progress: number[] }> {
  const d = await context('clips', files, values);
  const outputs = await runTransition(d.ctx);
  assert.equal(outputs.length, 1);
  assert.equal(outputs[0]!.mimeType, 'video/mp4');
  return { out: outputs[0]!, progress: d.progress };
}

before(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'toolrun-video-'));
  const made = await Promise.all([
    makeClip(dir, 'red.mp4', { color: 'red', width: 320, height: 180, seconds: 2, fps: 25, tone: 440 }),
    makeClip(dir, 'blue.mp4', { color: 'blue', width: 320, height: 180, seconds: 2, fps: 25, tone: 660 }),
    // Another size (square), another rate, no audio.
    makeClip(dir, 'green.mp4', { color: 'green', width: 240, height: 240, seconds: 1.5, fps: 15, tone: null }),
    makeClip(dir, 'small.mp4', { color: 'yellow', width: 320, height: 180, seconds: 1, fps: 24, tone: 500 }),
    makeClip(dir, 'hd.mp4', { color: 'gray', width: 1920, height: 1080, seconds: 0.4, fps: 5, tone: null }),
    makePatternClip(dir, 'long.mp4', { width: 320, height: 180, seconds: 8, fps: 25 }),
  ]);
  [clip.red, clip.blue, clip.green, clip.small, clip.hd, clip.long] = made;
});
after(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

describe('video_transition on real ffmpeg', () => {
  test('dissolve: length = sum - transition, first clip size, H.264 + AAC, a mid-transition frame mixes both colours', async () => {
    const { out, progress } = await transition([clip.red!, clip.blue!], { style: 'dissolve', duration_seconds: 1 });
    const p = await probe(out.path);
    assert.ok(Math.abs(p.duration - 3) <= 2 * FRAME, `duration ${p.duration}`);
    assert.equal(p.video?.codec, 'h264');
    assert.equal(p.audio?.codec, 'aac');
    assert.equal(p.video?.width, 320);
    assert.equal(p.video?.height, 180);
    assert.ok(Math.abs((p.video?.fps ?? 0) - 25) < 0.01, `fps ${p.video?.fps}`);
    assert.ok(Math.abs((p.audio?.duration ?? 0) - 3) <= 0.1, `audio ${p.audio?.duration}`);
    // The transition spans 1.0 .. 2.0 s of the output.
    const before = await frameAt(out.path, 0.5);
    const mid = await frameAt(out.path, 1.5);
    const afterwards = await frameAt(out.path, 2.5);
    assert.ok(isRed(before.all), show(before));
    assert.ok(isBlue(afterwards.all), show(afterwards));
    assert.ok(mid.all.r > 80 && mid.all.r < 180 && mid.all.b > 80 && mid.all.b < 180, `between red and blue: ${show(mid)}`);
    // Uniform: a dissolve has no edge.
    assert.ok(Math.abs(mid.left.b - mid.right.b) < 10, show(mid));
    // Progress: probing, then the encode, only ever increasing, ending near 1.
    assert.ok(progress.length >= 2, `progress ${progress}`);
    for (let i = 1; i < progress.length; i++) assert.ok(progress[i]! > progress[i - 1]!, `progress ${progress}`);
    assert.ok(progress.at(-1)! >= 0.98, `progress ${progress}`);
  });

  test('fade goes through black: the middle of the transition is dark, its start is a dimmed first clip', async () => {
    const { out } = await transition([clip.red!, clip.blue!], { duration_seconds: 1 });
    const p = await probe(out.path);
    assert.ok(Math.abs(p.duration - 3) <= 2 * FRAME, `duration ${p.duration}`);
    const early = await frameAt(out.path, 1.2);
    const mid = await frameAt(out.path, 1.5);
    const late = await frameAt(out.path, 1.84);
    assert.ok(mid.all.r < 40 && mid.all.g < 40 && mid.all.b < 40, `dark: ${show(mid)}`);
    assert.ok(early.all.r > 120 && early.all.r < 240 && early.all.b < 20, `dimmed red: ${show(early)}`);
    assert.ok(late.all.b > 120 && late.all.b < 240 && late.all.r < 20, `dimmed blue: ${show(late)}`);
    assert.ok(isRed((await frameAt(out.path, 0.8)).all));
    assert.ok(isBlue((await frameAt(out.path, 2.2)).all));
  });

  test('wipe_left uncovers the next clip from the right, wipe_right from the left', async () => {
    const [left, right] = await Promise.all([
      transition([clip.red!, clip.blue!], { style: 'wipe_left', duration_seconds: 1 }),
      transition([clip.red!, clip.blue!], { style: 'wipe_right', duration_seconds: 1 }),
    ]);
    const l = await frameAt(left.out.path, 1.5);
    assert.ok(isRed(l.left) && isBlue(l.right), `wipe_left mid: ${show(l)}`);
    const r = await frameAt(right.out.path, 1.5);
    assert.ok(isBlue(r.left) && isRed(r.right), `wipe_right mid: ${show(r)}`);
    // Early in the wipe only a sliver is uncovered: most of the frame is still the first clip.
    const early = await frameAt(left.out.path, 1.12);
    assert.ok(isRed(early.left) && isRed(early.centre) && early.right.b > 20, `wipe_left early: ${show(early)}`);
    for (const w of [left, right]) {
      assert.ok(isRed((await frameAt(w.out.path, 0.6)).all));
      assert.ok(isBlue((await frameAt(w.out.path, 2.4)).all));
    }
  });

  test('three clips: another size is scaled and padded, another rate follows the first, a silent clip gets silence', async () => {
    const { out } = await transition([clip.red!, clip.green!, clip.blue!], { style: 'dissolve', duration_seconds: 0.5 });
    const p = await probe(out.path);
    // 2 + 1.5 + 2 - 2 x 0.5
    assert.ok(Math.abs(p.duration - 4.5) <= 2 * FRAME, `duration ${p.duration}`);
    assert.equal(p.video?.width, 320);
    assert.equal(p.video?.height, 180);
    assert.ok(Math.abs((p.video?.fps ?? 0) - 25) < 0.01, `fps ${p.video?.fps}`);
    assert.equal(p.audio?.codec, 'aac');
    assert.ok(Math.abs((p.audio?.duration ?? 0) - 4.5) <= 0.1, `audio ${p.audio?.duration}`);
    // Green alone from 2.0 to 2.5 s: 240x240 scaled to 180x180 in the middle, black bars of 70 px.
    const g = await frameAt(out.path, 2.25);
    assert.ok(g.centre.g > 80 && g.centre.r < 30 && g.centre.b < 30, `green centre: ${show(g)}`);
    assert.ok(g.left.r < 20 && g.left.b < 20 && g.left.g < 40, `left quarter mostly bar: ${show(g)}`);
    assert.equal(g.width, 320);
    assert.ok(isRed((await frameAt(out.path, 1)).all));
    assert.ok(isBlue((await frameAt(out.path, 4)).all));
  });

  test('a middle clip shorter than its two transitions: they are chained, the length formula still holds', async () => {
    // Green is 1.53 s (23 frames at 15 fps): shorter than 2 x 0.9 s, longer than 0.9 s.
    const { out } = await transition([clip.red!, clip.green!, clip.blue!], { style: 'wipe_left', duration_seconds: 0.9 });
    const p = await probe(out.path);
    const green = 23 / 15;
    assert.ok(Math.abs(p.duration - (2 + green + 2 - 2 * 0.9)) <= 2 * FRAME, `duration ${p.duration}`);
    assert.ok(isRed((await frameAt(out.path, 0.5)).all));
    assert.ok(isBlue((await frameAt(out.path, p.duration - 0.3)).all));
  });

  test('a clip that ffprobe finds shorter than the transition fails the run with a clear error', async () => {
    const d = await context('clips', [clip.red!, clip.green!], { style: 'fade', duration_seconds: 1.8 });
    await assert.rejects(runTransition(d.ctx), (err: unknown) => {
      assert.ok(err instanceof ToolError, String(err));
      assert.match(err.message, /must be shorter than every clip; clip 2 is 1\.53 s long/);
      return true;
    });
  });

  test('a truncated clip fails with a ToolError naming the clip, without server paths', async () => {
    const d = await context('clips', [clip.red!, clip.blue!], { style: 'dissolve', duration_seconds: 0.5 });
    const victim = d.ctx.files.clips![1]!.path;
    const bytes = await fs.readFile(victim);
    await fs.writeFile(victim, bytes.subarray(0, Math.floor(bytes.length * 0.6)));
    await assert.rejects(runTransition(d.ctx), (err: unknown) => {
      assert.ok(err instanceof ToolError, String(err));
      assert.match(err.message, /clip 2/);
      assert.ok(!err.message.includes(dir) && !err.message.includes('/'), err.message);
      return true;
    });
    assert.deepEqual(ffmpegChildren(), []);
  });

  test('the graph uses only filters ffmpeg 4.1 has (no xfade)', () => {
    const facts = { width: 320, height: 180, fps: { num: 25, den: 1 }, durationSeconds: 2, videoCodec: 'h264', hasAudio: true, audioCodec: 'aac' };
    for (const style of ['fade', 'dissolve', 'wipe_left', 'wipe_right'] as const) {
      const plan = planTransition([facts, { ...facts, hasAudio: false }], style, 1);
      assert.doesNotMatch(plan.graph, /xfade/);
      assert.equal(plan.frames, 75);
      assert.equal(plan.transitionFrames, 25);
    }
  });
});

describe('video_upscale on real ffmpeg', () => {
  test('320x180 at 24 fps to 1080p: 1920x1080, rate kept, audio packets copied unchanged', async () => {
    const d = await context('video', [clip.small!], { target: '1080p' });
    const [out] = await runUpscale(d.ctx);
    assert.ok(out);
    assert.equal(out.mimeType, 'video/mp4');
    const p = await probe(out.path);
    const src = await probe(clip.small!);
    assert.equal(p.video?.codec, 'h264');
    assert.equal(p.video?.width, 1920);
    assert.equal(p.video?.height, 1080);
    assert.ok(Math.abs((p.video?.fps ?? 0) - 24) < 0.01, `fps ${p.video?.fps}`);
    assert.ok(Math.abs(p.duration - src.duration) <= 2 / 24, `duration ${p.duration} vs ${src.duration}`);
    assert.equal(p.audio?.codec, src.audio?.codec);
    assert.equal(await packetsMd5(out.path, 'a'), await packetsMd5(clip.small!, 'a'));
    const frame = await frameAt(out.path, 0.5);
    // Yellow stays yellow.
    assert.ok(frame.all.r > 220 && frame.all.g > 220 && frame.all.b < 40, show(frame));
  });

  test('an input already at the target height fails at run time too', async () => {
    const d = await context('video', [clip.hd!], { target: '1080p' });
    await assert.rejects(runUpscale(d.ctx), /already 1080 px high/);
  });

  test('cancel: aborting mid-encode kills ffmpeg at once and leaves no child process', async () => {
    const d = await context('video', [clip.long!], { target: '4k', method: 'lanczos' });
    const running = runUpscale(d.ctx);
    const outcome = running.then(
      () => 'resolved',
      (err: unknown) => err,
    );
    // Wait for real encode progress (parsed from -progress), then for the ffmpeg child itself.
    await waitFor('encode progress', async () => (d.progress.some((f) => f > 0.02 && f < 0.9) ? true : undefined), 30_000);
    const pids = ffmpegChildren();
    assert.equal(pids.length, 1, `ffmpeg children ${pids}`);
    const abortedAt = Date.now();
    d.abort.abort('canceled');
    const err = await outcome;
    const took = Date.now() - abortedAt;
    assert.ok(err instanceof Error && err.name === 'AbortError', String(err));
    assert.ok(took < 1500, `rejected ${took} ms after the abort`);
    assert.equal(processExists(pids[0]!), false, `ffmpeg ${pids[0]} still exists`);
    assert.deepEqual(ffmpegChildren(), []);
    for (let i = 1; i < d.progress.length; i++) assert.ok(d.progress[i]! > d.progress[i - 1]!, `progress ${d.progress}`);
  });

  test('the hard time limit and the output size cap fail the job with a ToolError', async () => {
    const signal = new AbortController().signal;
    const inputs = [{ path: clip.long!, label: 'the video' }];
    const args = ['-vf', 'scale=-2:2160:flags=lanczos', '-c:v', 'libx264', '-preset', 'veryfast', '-f', 'mp4'];
    const base = { bins: media, inputs, args, expectedSeconds: 8, signal };
    const t0 = Date.now();
    await assert.rejects(
      runFfmpeg({ ...base, output: path.join(dir, 'slow.mp4'), timeLimitMs: 400, maxOutputBytes: 1e9 }),
      (err: unknown) => err instanceof ToolError && /took longer than its 0\.4 s limit/.test(err.message),
    );
    assert.ok(Date.now() - t0 < 5000);
    await assert.rejects(
      runFfmpeg({ ...base, args: ['-c:v', 'libx264', '-preset', 'ultrafast', '-f', 'mp4'], output: path.join(dir, 'big.mp4'), timeLimitMs: 30_000, maxOutputBytes: 20_000 }),
      (err: unknown) => err instanceof ToolError && /larger than/.test(err.message),
    );
    await assert.rejects(fs.stat(path.join(dir, 'big.mp4')));
    assert.deepEqual(ffmpegChildren(), []);
  });
});

describe('through the API and a real worker', () => {
  let s: TestServer;
  let worker: RunWorker;
  let team: TeamFixture;
  const ids: Record<string, string> = {};
  const tools = testRegistry();

  before(async () => {
    s = await startTestServer({ tools, env: { TOOLRUN_WORKER_POLL_MS: '200' } });
    worker = await startTestWorker(s, tools);
    team = await makeTeam(s.database.db, { plan: 'pro', sparks: 1000, rate: 300 });
    for (const name of ['red', 'blue', 'small', 'hd'] as const) {
      ids[name] = await uploadReady(s, team.key, await fs.readFile(clip[name]!), `${name}.mp4`, 'video/mp4');
    }
  });
  after(async () => {
    await worker.stop(1000);
    await s.close();
  });

  type ApiRun = Omit<RunJson, 'outputs'> & { outputs: (RunJson['outputs'][number] & { width?: number | null; height?: number | null; duration_seconds?: number | null })[] };

  async function runToEnd(tool: string, inputs: Record<string, unknown>): Promise<{ done: ApiRun; est: number }> {
    const est = await estimate(s, team.key, tool, { inputs });
    assert.equal(est.statusCode, 200, est.body);
    const sparks = est.json<EstimateJson>().sparks;
    const run = runOf(await start(s, team.key, tool, { inputs }));
    // Watched in the database (the API's rate limit is not what is tested here), then read once through the API.
    await waitFor(
      `${tool} run`,
      async () => {
        const { rows } = await s.database.db.pool.query<{ status: string }>('SELECT status FROM runs WHERE id = $1::uuid', [run.id]);
        return ['succeeded', 'failed', 'canceled'].includes(rows[0]?.status ?? '') ? true : undefined;
      },
      60_000,
    );
    const res = await getRun(s, team.key, run.id);
    assert.equal(res.statusCode, 200, res.body);
    return { done: res.json<ApiRun>(), est: sparks };
  }

  test('video_transition: the run succeeds, costs its estimate, and its output has the measured size and length', async () => {
    const { done, est } = await runToEnd('video_transition', { clips: [ids.red, ids.blue], style: 'wipe_right', duration_seconds: 0.5 });
    assert.equal(done.status, 'succeeded', done.error ?? '');
    assert.equal(done.cost_sparks, est);
    assert.equal(done.progress, 1);
    assert.equal(done.outputs.length, 1);
    const o = done.outputs[0]!;
    assert.equal(o.mime_type, 'video/mp4');
    assert.equal(o.file_name, 'transition.mp4');
    assert.equal(o.width, 320);
    assert.equal(o.height, 180);
    assert.ok(Math.abs((o.duration_seconds ?? 0) - 3.5) <= 2 * FRAME, `duration ${o.duration_seconds}`);
  });

  test('video_upscale: the run succeeds at 1920x1080 and costs its estimate', async () => {
    const { done, est } = await runToEnd('video_upscale', { video: [ids.small] });
    assert.equal(done.status, 'succeeded', done.error ?? '');
    assert.equal(done.cost_sparks, est);
    const o = done.outputs[0]!;
    assert.equal(o.width, 1920);
    assert.equal(o.height, 1080);
    assert.equal(o.file_name, 'upscaled-1080p.mp4');
    assert.ok(Math.abs((o.duration_seconds ?? 0) - 1) <= 0.1, `duration ${o.duration_seconds}`);
  });

  test('422s: a transition not shorter than a clip, too few or too many clips, an input already at the target', async () => {
    const slot = (name: string) => ['body', 'inputs', name];
    for (const d of [2, 2.5]) {
      for (const send of [estimate, start]) {
        assertFieldErrors(await send(s, team.key, 'video_transition', { inputs: { clips: [ids.red, ids.blue], duration_seconds: d } }), [
          { loc: slot('duration_seconds'), code: 'longer_than_clip' },
        ]);
      }
    }
    assertFieldErrors(await start(s, team.key, 'video_transition', { inputs: { clips: [ids.red] } }), [{ loc: slot('clips'), code: 'too_few' }]);
    const eleven = Array.from({ length: 11 }, () => ids.red);
    assertFieldErrors(await start(s, team.key, 'video_transition', { inputs: { clips: eleven } }), [{ loc: slot('clips'), code: 'too_many' }]);
    assertFieldErrors(await start(s, team.key, 'video_upscale', { inputs: { video: [ids.hd], target: '1080p' } }), [
      { loc: slot('video'), code: 'already_at_target' },
    ]);
    // The same 1080p input is fine for 4k.
    assert.equal((await estimate(s, team.key, 'video_upscale', { inputs: { video: [ids.hd], target: '4k' } })).statusCode, 200);
  });
});
