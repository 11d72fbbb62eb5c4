import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { resolveMediaBinaries } from '../src/media/binaries.js';
import { probeVideo, runFfmpeg } from '../src/media/ffmpeg.js';
import type { RunWorker } from '../src/runs/worker.js';
import { videoUpscale } from '../src/tools/catalog/video-upscale.js';
import { ToolError } from '../src/tools/manifest.js';
import { LumaNet, sharedVideoNet, VIDEO_NET, videoModelPath } from '../src/tools/upscaler/luma-net.js';
import { H264, MP4 } from '../src/tools/video/common.js';
import { expectedFrames, runLearned, type LearnedJob } from '../src/tools/video/learned-frames.js';
import { runUpscale } from '../src/tools/video/upscale.js';
import { learnedTimeLimitSeconds, UPSCALE_RUN_LIMIT_SECONDS } from '../src/tools/video/upscale-rules.js';
import { upscaleWork } from '../src/tools/video/upscale-work.js';
import { makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { centredLanczos3 } from './helpers/lanczos-reference.js';
import { assertFieldErrors, estimate, getRun, runOf, start, uploadReady, type EstimateJson, type RunJson } from './helpers/runs.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { testRegistry } from './helpers/test-tools.js';
import { ffmpegChildren, makeClip, makePatternClip, packetsMd5, probe, processExists, videoRunContext } from './helpers/videos.js';
import { startTestWorker, waitFor } from './helpers/worker.js';

// video_upscale's `method` (issue 28): the learned path between two ffmpegs (learned-frames.ts)
// on real ffmpeg and the real ONNX network, and `lanczos` unchanged.

const media = resolveMediaBinaries();
const PHOTO = 'node_modules/@jimp/test-utils/images/panoramic.jpg';
let dir: string;
const clip: Record<string, string> = {};
/** The video network's graph with zero correction: its 2x luma is its fixed centred-Lanczos3 convolution alone. */
let zeroNet: LumaNet;

function exec(cmd: string, args: string[]): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { encoding: 'buffer', maxBuffer: 256 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${path.basename(cmd)} failed: ${stderr.toString().slice(-2000)}`));
      else resolve(stdout);
    });
  });
}

/**
 * A clip panning across a photograph (integer steps, so each frame is an exact crop): `frames`
 * frames of width x height at 24 fps, luma lossless (x264 -qp 0, 4:4:4 so the chroma is too),
 * with a tone; `reduce` makes each frame half the size first (a cubic reduce).
 */
async function photoClip(name: string, opts: { width: number; height: number; frames: number; reduce: boolean }): Promise<string> {
  const frameDir = await fs.mkdtemp(path.join(dir, 'frames-'));
  const photo = sharp(PHOTO).resize({ height: 2 * opts.height });
  const big = await photo.raw().toBuffer({ resolveWithObject: true });
  for (let i = 0; i < opts.frames; i++) {
    let img = sharp(big.data, { raw: big.info }).extract({ left: 400 + 3 * i, top: i, width: opts.width, height: opts.height });
    if (opts.reduce) img = sharp(await img.png().toBuffer()).resize(opts.width / 2, opts.height / 2, { kernel: 'cubic' });
    await img.png().toFile(path.join(frameDir, `f${String(i).padStart(3, '0')}.png`));
  }
  const out = path.join(dir, name);
  await exec(media.ffmpeg, [
    '-v', 'error', '-nostdin', '-framerate', '24', '-i', path.join(frameDir, 'f%03d.png'), '-f', 'lavfi', '-i', 'sine=frequency=500:sample_rate=44100',
    '-t', String(opts.frames / 24), '-c:v', 'libx264', '-preset', 'ultrafast', '-qp', '0', '-pix_fmt', 'yuv444p', '-c:a', 'aac', '-shortest',
    '-movflags', '+faststart', '-y', out,
  ]);
  return out;
}

/** Every frame's planes, decoded to raw `pixFmt` (yuv444p or yuv420p) at the stream's size. */
async function planes(file: string, pixFmt: 'yuv444p' | 'yuv420p'): Promise<{ width: number; height: number; frames: { y: Buffer; u: Buffer; v: Buffer }[] }> {
  const p = await probe(file);
  const width = p.video!.width!;
  const height = p.video!.height!;
  const raw = await exec(media.ffmpeg, ['-v', 'error', '-nostdin', '-i', file, '-map', '0:v:0', '-f', 'rawvideo', '-pix_fmt', pixFmt, '-']);
  const ys = width * height;
  const cs = pixFmt === 'yuv444p' ? ys : (width / 2) * (height / 2);
  const size = ys + 2 * cs;
  assert.equal(raw.length % size, 0, `${raw.length} bytes is not a whole number of ${width}x${height} ${pixFmt} frames`);
  const frames = [];
  for (let at = 0; at < raw.length; at += size) {
    frames.push({ y: raw.subarray(at, at + ys), u: raw.subarray(at + ys, at + ys + cs), v: raw.subarray(at + ys + cs, at + size) });
  }
  return { width, height, frames };
}

function psnr(a: Buffer, b: Buffer): number {
  assert.equal(a.length, b.length);
  let se = 0;
  for (let i = 0; i < a.length; i++) se += (a[i]! - b[i]!) ** 2;
  return se === 0 ? Infinity : 10 * Math.log10((255 * 255 * a.length) / se);
}

const context = (file: string, values: Record<string, unknown>) => videoRunContext(dir, 'video', [file], values);

/** runLearned straight to exactly 2x (no resample), for comparisons at the network's own size. */
async function learned2x(file: string, net: LumaNet, encodeArgs: string[], extra: Partial<LearnedJob> = {}): Promise<string> {
  const p = await probe(file);
  const input = { path: file, label: 'the video', pricedSeconds: p.duration };
  const facts = await probeVideo(media, input, { signal: new AbortController().signal, timeLimitMs: 60_000 });
  const output = path.join(await fs.mkdtemp(path.join(dir, 'x2-')), 'x2.mp4');
  await runLearned({
    bins: media,
    input,
    facts,
    targetHeight: 2 * facts.height,
    encodeArgs,
    output,
    signal: new AbortController().signal,
    timeLimitMs: 120_000,
    maxOutputBytes: 1024 ** 3,
    threads: 2,
    net,
    onProgress: () => undefined,
    ...extra,
  });
  return output;
}

/** x264 lossless 4:2:0: the output's planes are exactly the frames that went in. */
const LOSSLESS = ['-c:v', 'libx264', '-preset', 'ultrafast', '-qp', '0', '-pix_fmt', 'yuv420p', '-c:a', 'copy', '-f', 'mp4'];

before(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'toolrun-video-learned-'));
  zeroNet = new LumaNet({ modelPath: 'test/fixtures/upscaler/zero-correction-video.onnx', threads: 1, ...VIDEO_NET });
  [clip.photo, clip.truth] = await Promise.all([
    photoClip('photo-160.mp4', { width: 320, height: 180, frames: 24, reduce: true }),
    photoClip('photo-320.mp4', { width: 320, height: 180, frames: 24, reduce: false }),
  ]);
  [clip.oddPhoto, clip.odd, clip.long] = await Promise.all([
    photoClip('photo-161.mp4', { width: 161, height: 91, frames: 6, reduce: false }),
    makeClip(dir, 'odd.mp4', { color: 'orange', width: 161, height: 91, seconds: 0.5, fps: 10, tone: 300 }),
    makePatternClip(dir, 'long.mp4', { width: 320, height: 180, seconds: 8, fps: 25 }),
  ]);
});
after(async () => {
  await zeroNet.close();
  // The runs without a net of their own used the process's; its thread keeps the process alive
  // (luma-net.ts unrefs the worker before adding its message listener, which refs it again).
  await sharedVideoNet().close();
  await fs.rm(dir, { recursive: true, force: true });
});

describe('video_upscale method learned, on real ffmpeg and the real network', () => {
  test('160x90 to 1080p: 1920x1080, every frame, rate and audio kept, progress per frame; the frames are the picture', async () => {
    const d = await context(clip.photo!, { target: '1080p', method: 'learned' });
    const [out] = await runUpscale(d.ctx);
    assert.ok(out);
    assert.equal(out.fileName, 'upscaled-1080p.mp4');
    const p = await probe(out.path);
    assert.equal(p.video?.codec, 'h264');
    assert.equal(p.video?.width, 1920);
    assert.equal(p.video?.height, 1080);
    assert.ok(Math.abs((p.video?.fps ?? 0) - 24) < 0.01, `fps ${p.video?.fps}`);
    assert.equal(await packetsMd5(out.path, 'a'), await packetsMd5(clip.photo!, 'a'));
    const got = await planes(out.path, 'yuv420p');
    assert.equal(got.frames.length, 24);
    // Progress: one report per frame but the last, only increasing, then 1 (mapped after the probe's 0.02).
    assert.ok(d.progress.length >= 24, `progress ${d.progress}`);
    for (let i = 1; i < d.progress.length; i++) assert.ok(d.progress[i]! > d.progress[i - 1]!, `progress ${d.progress}`);
    assert.ok(d.progress.at(-1)! >= 0.99, `progress ${d.progress}`);
    // The same frames through the Lanczos path: close (the same picture), not garbage.
    const lz = await runUpscale((await context(clip.photo!, { target: '1080p', method: 'lanczos' })).ctx);
    const ref = await planes(lz[0]!.path, 'yuv420p');
    for (const i of [0, 12, 23]) {
      const y = psnr(got.frames[i]!.y, ref.frames[i]!.y);
      assert.ok(y > 30, `frame ${i}: luma PSNR against the Lanczos output ${y.toFixed(2)} dB`);
      const u = psnr(got.frames[i]!.u, ref.frames[i]!.u);
      assert.ok(u > 35, `frame ${i}: chroma PSNR against the Lanczos output ${u.toFixed(2)} dB`);
    }
  });

  test('at exactly 2x (no resample) the luma is near the original frames, no worse than ffmpeg Lanczos by more than 0.5 dB', async (t) => {
    const net = new LumaNet({ modelPath: videoModelPath(), threads: 1, ...VIDEO_NET });
    try {
      const x2 = await learned2x(clip.photo!, net, [...H264, '-c:a', 'copy', ...MP4]);
      const truth = await planes(clip.truth!, 'yuv444p');
      const got = await planes(x2, 'yuv420p');
      const lzOut = path.join(dir, 'lanczos-2x.mp4');
      await exec(media.ffmpeg, ['-v', 'error', '-nostdin', '-i', clip.photo!, '-vf', 'scale=-2:180:flags=lanczos', ...H264, '-an', '-f', 'mp4', '-y', lzOut]);
      const lz = await planes(lzOut, 'yuv420p');
      assert.equal(got.width, 320);
      assert.equal(got.height, 180);
      assert.equal(got.frames.length, truth.frames.length);
      let learnedDb = 0;
      let lanczosDb = 0;
      for (let i = 0; i < truth.frames.length; i++) {
        learnedDb += psnr(got.frames[i]!.y, truth.frames[i]!.y) / truth.frames.length;
        lanczosDb += psnr(lz.frames[i]!.y, truth.frames[i]!.y) / truth.frames.length;
      }
      t.diagnostic(`luma PSNR against the original frames: learned ${learnedDb.toFixed(2)} dB, ffmpeg Lanczos ${lanczosDb.toFixed(2)} dB`);
      assert.ok(learnedDb > 24, `learned: ${learnedDb.toFixed(2)} dB against the original frames`);
      assert.ok(learnedDb > lanczosDb - 0.5, `learned ${learnedDb.toFixed(2)} dB, ffmpeg Lanczos ${lanczosDb.toFixed(2)} dB`);
    } finally {
      await net.close();
    }
  });

  for (const name of ['photo', 'oddPhoto']) {
    test(`with a zero-correction network the luma is a centred Lanczos3 of the decoded luma, the chroma the source chroma (${name === 'photo' ? '160x90' : '161x91: the odd column and row repeated for the 2x2 blocks, then cut off'})`, async (t) => {
      const x2 = await learned2x(clip[name]!, zeroNet, LOSSLESS);
      const src = await planes(clip[name]!, 'yuv444p');
      const got = await planes(x2, 'yuv420p');
      assert.equal(got.frames.length, src.frames.length);
      assert.equal(got.width, 2 * src.width);
      for (const i of [0, Math.floor(src.frames.length / 3), src.frames.length - 1]) {
        const s = src.frames[i]!;
        const expected = centredLanczos3({ data: Buffer.from(s.y), width: src.width, height: src.height, channels: 1 }, 2).data;
        const y = got.frames[i]!.y;
        let worst = 0;
        for (let k = 0; k < y.length; k++) worst = Math.max(worst, Math.abs(y[k]! - expected[k]!));
        t.diagnostic(`frame ${i}: at most ${worst} grey level(s) from the reference`);
        assert.ok(worst <= 1, `frame ${i}: luma up to ${worst} levels from the reference Lanczos3`);
        assert.ok(got.frames[i]!.u.equals(s.u) && got.frames[i]!.v.equals(s.v), `frame ${i}: chroma is the source's`);
      }
    });
  }

  test('left out, the runner takes the method the price took: learned for this clip, lanczos for a row too long for learned', async () => {
    // A network that cannot load: the learned path fails on it, the Lanczos path never asks for it.
    const broken = new LumaNet({ modelPath: path.join(dir, 'no-such-model.onnx'), threads: 1, ...VIDEO_NET });
    try {
      const short = await context(clip.photo!, { target: '1080p' });
      await assert.rejects(runUpscale(short.ctx, { net: broken }), /network failed/);
      const long = await context(clip.photo!, { target: '1080p' });
      const file = long.ctx.files.video![0]!;
      // An hour at the rate assumed when none is known (240 fps): past learned's time limit.
      long.ctx.files.video![0] = { ...file, info: { ...file.info, durationSeconds: 3600 } };
      const [out] = await runUpscale(long.ctx, { net: broken });
      assert.equal((await probe(out!.path)).video?.height, 1080);
    } finally {
      await broken.close();
    }
    assert.deepEqual(ffmpegChildren(), []);
  });

  test('odd sizes: 161x91 gives the width the Lanczos path gives, every frame', async () => {
    const [lOut] = await runUpscale((await context(clip.odd!, { target: '1080p', method: 'learned' })).ctx, { net: zeroNet });
    const [zOut] = await runUpscale((await context(clip.odd!, { target: '1080p', method: 'lanczos' })).ctx);
    const l = await probe(lOut!.path);
    const z = await probe(zOut!.path);
    assert.equal(l.video?.height, 1080);
    assert.equal(l.video?.width, z.video?.width);
    assert.equal((l.video?.width ?? 1) % 2, 0);
    const frames = (await planes(lOut!.path, 'yuv420p')).frames;
    assert.equal(frames.length, 5);
    // Orange stays orange: mean luma and chroma near the source's.
    const src = (await planes(clip.odd!, 'yuv444p')).frames[2]!;
    const mean = (b: Buffer) => b.reduce((a, x) => a + x, 0) / b.length;
    for (const k of ['y', 'u', 'v'] as const) assert.ok(Math.abs(mean(frames[2]![k]) - mean(src[k])) < 3, `${k}: ${mean(frames[2]![k])} vs ${mean(src[k])}`);
  });

  test('cancel mid-run: both ffmpegs are killed, the run rejects as aborted, no child process is left', async () => {
    const d = await context(clip.long!, { target: '1080p', method: 'learned' });
    const outcome = runUpscale(d.ctx, { net: zeroNet }).then(
      () => 'resolved',
      (err: unknown) => err,
    );
    await waitFor('frames through the network', async () => (d.progress.some((f) => f > 0.05) ? true : undefined), 60_000);
    const pids = ffmpegChildren();
    assert.equal(pids.length, 2, `ffmpeg children ${pids}`);
    const abortedAt = Date.now();
    d.abort.abort('canceled');
    const err = await outcome;
    const took = Date.now() - abortedAt;
    assert.ok(err instanceof Error && err.name === 'AbortError', String(err));
    assert.ok(took < 2000, `rejected ${took} ms after the abort`);
    for (const pid of pids) assert.equal(processExists(pid), false, `ffmpeg ${pid} still exists`);
    assert.deepEqual(ffmpegChildren(), []);
    const last = d.progress.at(-1)!;
    assert.ok(last < 0.9, `progress ${last}`);
    await assert.rejects(fs.stat(path.join(d.ctx.workDir, 'upscaled-1080p.mp4')));
  });

  test('the time limit stops both ffmpegs and fails with a ToolError', async () => {
    const t0 = Date.now();
    await assert.rejects(learned2x(clip.long!, zeroNet, LOSSLESS, { timeLimitMs: 500 }), (err: unknown) => {
      assert.ok(err instanceof ToolError && /took longer than its 0\.5 s limit/.test(err.message), String(err));
      return true;
    });
    assert.ok(Date.now() - t0 < 10_000);
    assert.deepEqual(ffmpegChildren(), []);
  });

  test('the frame count it expects is the length at the rate; the time limit grows with the priced length, up to the run limit', () => {
    const facts = { width: 2, height: 2, fps: { num: 30000, den: 1001 }, durationSeconds: 10.01, videoCodec: 'h264', hasAudio: false, audioCodec: null };
    assert.equal(expectedFrames(facts), 300);
    assert.equal(expectedFrames({ ...facts, durationSeconds: 0.001 }), 1);
    const limit = (pricedSeconds: number) =>
      learnedTimeLimitSeconds(upscaleWork({ kind: 'video', width: 960, height: 540, durationSeconds: pricedSeconds, frameRate: 25 }, 1080, 'learned')!);
    // 25 frames of 0.52 MP a second: 3 s per MP through the network, 0.1 s per MP encoded (2.07 MP).
    assert.equal(limit(10), Math.ceil(600 + 250 * (0.5184 * 3 + 2.0736 * 0.1)));
    assert.ok(limit(60) > limit(10) && limit(10) > limit(1), `${limit(1)} ${limit(10)} ${limit(60)}`);
    assert.equal(limit(4 * 3600), UPSCALE_RUN_LIMIT_SECONDS - 60);
    assert.equal(videoUpscale.timeoutSeconds, UPSCALE_RUN_LIMIT_SECONDS);
  });
});

describe('video_upscale method lanczos', () => {
  test("lanczos gives the output of the command used before issue 28, byte for byte", async () => {
    const src = clip.odd!;
    const p = await probe(src);
    const before = path.join(dir, 'before.mp4');
    // The command as it was (src/tools/video/upscale.ts before the method input), with the same bounds.
    await runFfmpeg({
      bins: media,
      inputs: [{ path: src, label: 'the video', pricedSeconds: p.duration }],
      args: ['-map', '0:v:0', '-map', '0:a:0?', '-vf', 'scale=-2:1080:flags=lanczos', '-vsync', 'passthrough', ...H264, '-c:a', 'copy', ...MP4],
      output: before,
      expectedSeconds: p.duration,
      signal: new AbortController().signal,
      timeLimitMs: 60_000,
      maxOutputBytes: 4 * 1024 ** 3,
      threads: 2,
    });
    const want = await fs.readFile(before);
    for (const values of [{ target: '1080p', method: 'lanczos' }]) {
      const [out] = await runUpscale((await context(src, values)).ctx, { threads: 2 });
      assert.ok((await fs.readFile(out!.path)).equals(want), `${JSON.stringify(values)}: the output differs from the command before issue 28`);
    }
  });
});

describe('through the API and a real worker', () => {
  let s: TestServer;
  let worker: RunWorker;
  let team: TeamFixture;
  let fileId: string;
  const tools = testRegistry();

  before(async () => {
    s = await startTestServer({ tools, env: { TOOLRUN_WORKER_POLL_MS: '200' } });
    worker = await startTestWorker(s, tools);
    team = await makeTeam(s.database.db, { plan: 'pro', sparks: 1000, rate: 300 });
    fileId = await uploadReady(s, team.key, await fs.readFile(clip.odd!), 'odd.mp4', 'video/mp4');
  });
  after(async () => {
    await worker.stop(1000);
    await s.close();
  });

  test('a method that is not a choice is a 422 on the slot; learned costs the lanczos price plus its frames through the network', async () => {
    for (const method of ['neural', 'LEARNED', 3]) {
      for (const send of [estimate, start]) {
        const res = await send(s, team.key, 'video_upscale', { inputs: { video: [fileId], method } });
        assertFieldErrors(res, [{ loc: ['body', 'inputs', 'method'], code: 'invalid_choice' }]);
      }
    }
    const price = async (inputs: Record<string, unknown>) => {
      const res = await estimate(s, team.key, 'video_upscale', { inputs: { video: [fileId], ...inputs } });
      assert.equal(res.statusCode, 200, res.body);
      return res.json<EstimateJson>().sparks;
    };
    assert.equal(await price({ method: 'lanczos' }), 2);
    // 161x91 at 10 fps for 0.5 s: 5 frames of 0.015 MP through the network, 1 Spark; left out, learned.
    assert.equal(await price({ method: 'learned' }), 3);
    assert.equal(await price({}), 3);
    assert.equal(await price({ method: 'learned', target: '4k' }), 7);
  });

  test('a learned run succeeds at 1080p and costs its estimate', async () => {
    const inputs = { video: [fileId], method: 'learned' };
    const est = await estimate(s, team.key, 'video_upscale', { inputs });
    assert.equal(est.statusCode, 200, est.body);
    const run = runOf(await start(s, team.key, 'video_upscale', { inputs }));
    await waitFor(
      'the learned run',
      async () => {
        const { rows } = await s.database.db.pool.query<{ status: string }>('SELECT status FROM runs WHERE id = $1::uuid', [run.id]);
        return ['succeeded', 'failed', 'canceled'].includes(rows[0]?.status ?? '') ? true : undefined;
      },
      120_000,
    );
    const res = await getRun(s, team.key, run.id);
    const done = res.json<RunJson & { outputs: { width?: number | null; height?: number | null }[] }>();
    assert.equal(done.status, 'succeeded', done.error ?? '');
    assert.equal(done.cost_sparks, est.json<EstimateJson>().sparks);
    assert.equal(done.outputs[0]?.height, 1080);
  });
});
