// Issue 34 items 6 and 7, "a run never costs less than its work", through the API on real
// uploads: video_upscale priced by frames x megapixels (learned: the network's input; lanczos:
// the encoder's output), its bounds, and its duration_seconds hint; image_upscale priced by the
// decoded bytes of a pixel (channels x bits) and bounded by them. Each price is the estimate, the
// hold and the charge. The clips are small or short: these check prices, not speed (the CPU a
// Spark buys is bench:tools' figure).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import sharp, { type Sharp } from 'sharp';
import { resolveMediaBinaries } from '../src/media/binaries.js';
import type { RunWorker } from '../src/runs/worker.js';
import { video, type MediaInfo } from '../src/tools/manifest.js';
import { learnedMinutesAt540p, upscaleMethod } from '../src/tools/video/upscale-rules.js';
import { makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { assertFieldErrors, call, estimate, finalRun, runOf, start, uploadReady, type EstimateJson } from './helpers/runs.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { testRegistry } from './helpers/test-tools.js';
import { startTestWorker } from './helpers/worker.js';

const media = resolveMediaBinaries();
const tools = testRegistry();
let s: TestServer;
let worker: RunWorker;
let team: TeamFixture;
let dir: string;
const ids: Record<string, string> = {};

function ffmpeg(args: string[]): Promise<void> {
  return new Promise((resolve, reject) =>
    execFile(media.ffmpeg, ['-v', 'error', '-nostdin', '-y', ...args], (err, _out, stderr) => (err ? reject(new Error(`ffmpeg: ${stderr}`)) : resolve())),
  );
}

/** A testsrc2 clip (H.264 ultrafast, no audio) of `frames` frames at `fps`. */
async function clip(name: string, width: number, height: number, fps: number, frames: number): Promise<Buffer> {
  const file = path.join(dir, name);
  await ffmpeg(['-f', 'lavfi', '-i', `testsrc2=size=${width}x${height}:rate=${fps}`, '-frames:v', String(frames), '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-movflags', '+faststart', file]);
  return fs.readFile(file);
}

/** A photo-like gradient, w x h, 8-bit RGB. */
function gradient(width: number, height: number): Sharp {
  const raw = Buffer.alloc(width * height * 3);
  for (let y = 0, i = 0; y < height; y++) {
    for (let x = 0; x < width; x++, i += 3) {
      raw[i] = (x * 255) / width;
      raw[i + 1] = (y * 255) / height;
      raw[i + 2] = ((x * y) >> 4) & 0xff;
    }
  }
  return sharp(raw, { raw: { width, height, channels: 3 } });
}

/**
 * An uncompressed little-endian TIFF of 32-bit float RGB samples (sharp writes TIFFs in 8 or 16
 * bits only): 12 bytes a pixel once decoded.
 */
function floatTiff(width: number, height: number): Buffer {
  const entries: [tag: number, type: number, count: number, value: number][] = [];
  const dataAt = 8 + 2 + 11 * 12 + 4 + 12;
  const extra = 8 + 2 + 11 * 12 + 4;
  entries.push([256, 4, 1, width], [257, 4, 1, height], [258, 3, 3, extra], [259, 3, 1, 1], [262, 3, 1, 2], [273, 4, 1, dataAt]);
  entries.push([277, 3, 1, 3], [278, 4, 1, height], [279, 4, 1, width * height * 12], [284, 3, 1, 1], [339, 3, 3, extra + 6]);
  const out = Buffer.alloc(dataAt + width * height * 12);
  out.write('II', 0, 'latin1');
  out.writeUInt16LE(42, 2);
  out.writeUInt32LE(8, 4);
  out.writeUInt16LE(entries.length, 8);
  entries.forEach(([tag, type, count, value], i) => {
    const at = 10 + 12 * i;
    out.writeUInt16LE(tag, at);
    out.writeUInt16LE(type, at + 2);
    out.writeUInt32LE(count, at + 4);
    if (type === 3 && count === 1) out.writeUInt16LE(value, at + 8);
    else out.writeUInt32LE(value, at + 8);
  });
  // BitsPerSample 32, 32, 32 and SampleFormat 3 (IEEE float) x 3, then the samples.
  for (let i = 0; i < 3; i++) out.writeUInt16LE(32, extra + 2 * i);
  for (let i = 0; i < 3; i++) out.writeUInt16LE(3, extra + 6 + 2 * i);
  for (let i = 0; i < width * height * 3; i++) out.writeFloatLE((i % 97) / 97, dataAt + 4 * i);
  return out;
}

async function price(tool: string, body: unknown): Promise<number> {
  const res = await estimate(s, team.key, tool, body);
  assert.equal(res.statusCode, 200, res.body);
  const est = res.json<EstimateJson>();
  assert.equal(est.reserve_sparks, est.sparks, 'the hold is the price');
  return est.sparks;
}

async function ledgerOf(runId: string): Promise<Record<string, number>> {
  const { rows } = await s.database.db.pool.query<{ kind: string; amount: string }>('SELECT kind, amount FROM ledger_entries WHERE run_id = $1::uuid', [runId]);
  return Object.fromEntries(rows.map((r) => [r.kind, Number(r.amount)]));
}

/** Starts a run, checks its hold is `sparks`, and either cancels it or waits for it to succeed and checks the charge. */
async function holdAndCharge(tool: string, inputs: Record<string, unknown>, sparks: number, finish: 'cancel' | 'succeed'): Promise<void> {
  const run = runOf(await start(s, team.key, tool, { inputs }));
  assert.equal(run.cost_sparks, sparks, 'cost_sparks in flight is the hold');
  assert.equal((await ledgerOf(run.id)).hold, -sparks);
  if (finish === 'cancel') {
    const res = await call(s, team.key, 'POST', `/v1/runs/${run.id}/cancel`);
    assert.equal(res.statusCode, 200, res.body);
    return;
  }
  const done = await finalRun(s, team.key, run.id);
  assert.equal(done.status, 'succeeded', done.error ?? '');
  assert.equal(done.cost_sparks, sparks);
  assert.deepEqual(await ledgerOf(run.id), { hold: -sparks, release: sparks, charge: -sparks });
}

before(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'toolrun-prices-'));
  s = await startTestServer({ tools, env: { TOOLRUN_WORKER_POLL_MS: '200' } });
  worker = await startTestWorker(s, tools);
  team = await makeTeam(s.database.db, { plan: 'pro', sparks: 100_000, rate: 300 });
  const [fast, wide, narrow, small] = await Promise.all([
    // The issue's: 1916x1076 at 240 fps, 1 s (240 frames).
    clip('fast.mp4', 1916, 1076, 240, 240),
    // 5 s at 240 fps of a small frame whose 4K output is full size (3840x2160).
    clip('wide.mp4', 192, 108, 240, 1200),
    // 4096x128: to 1080p its frames would be 34560 x 1080 (37.3 MP), past what a video may hold.
    clip('narrow.mp4', 4096, 128, 25, 2),
    // A learned run small enough to finish here: 160x90, 60 fps, 0.5 s.
    clip('small.mp4', 160, 90, 60, 30),
  ]);
  ids.fast = await uploadReady(s, team.key, fast, 'fast.mp4', 'video/mp4');
  ids.wide = await uploadReady(s, team.key, wide, 'wide.mp4', 'video/mp4');
  ids.narrow = await uploadReady(s, team.key, narrow, 'narrow.mp4', 'video/mp4');
  ids.small = await uploadReady(s, team.key, small, 'small.mp4', 'video/mp4');
  // 3 MP (2000 x 1500), the same picture as an 8-bit RGB JPEG and a 16-bit RGBA PNG in Display P3.
  const jpeg = await gradient(2000, 1500).jpeg({ quality: 90 }).toBuffer();
  const png16 = await gradient(2000, 1500).ensureAlpha(0.75).toColourspace('rgb16').withIccProfile('p3').png({ compressionLevel: 1 }).toBuffer();
  const meta = await sharp(png16).metadata();
  assert.deepEqual([meta.channels, meta.depth, meta.hasProfile], [4, 'ushort', true]);
  ids.jpeg = await uploadReady(s, team.key, jpeg, 'photo.jpg', 'image/jpeg');
  ids.png16 = await uploadReady(s, team.key, png16, 'photo16.png', 'image/png');
  // A float RGB TIFF: 12 bytes a pixel, past the 8 of 16-bit RGBA.
  const tiff = floatTiff(64, 48);
  assert.deepEqual(Object.values(await sharp(tiff).metadata().then((m) => ({ depth: m.depth, channels: m.channels }))), ['float', 3]);
  ids.float = await uploadReady(s, team.key, tiff, 'float.tiff', 'image/tiff');
  // 2100 px wide: 4x would make 8400 px, past the 8192 a side; 2x is fine. And a small photo to run at 4x.
  ids.wide2100 = await uploadReady(s, team.key, await gradient(2100, 60).jpeg({ quality: 90 }).toBuffer(), 'wide.jpg', 'image/jpeg');
  ids.small4 = await uploadReady(s, team.key, await gradient(240, 180).jpeg({ quality: 90 }).toBuffer(), 'small.jpg', 'image/jpeg');
});
after(async () => {
  await worker.stop(1000);
  await s.close();
  await fs.rm(dir, { recursive: true, force: true });
});

describe('video_upscale is priced by its frames and their size (item 6)', () => {
  test('left out, method is learned where its time limit takes the work and lanczos past it, priced as that one (issue 38 item 3)', async () => {
    const both = async (inputs: Record<string, unknown>, body: Record<string, unknown> = {}) => ({
      leftOut: await price('video_upscale', { ...body, inputs }),
      learned: await price('video_upscale', { ...body, inputs: { ...inputs, method: 'learned' } }),
      lanczos: await price('video_upscale', { ...body, inputs: { ...inputs, method: 'lanczos' } }),
    });
    // A short file and a short length: learned, which costs more than lanczos.
    for (const p of [await both({ video: [ids.small] }), await both({}, { duration_seconds: 95 }), await both({ target: '4k' }, { duration_seconds: 25 })]) {
      assert.equal(p.leftOut, p.learned);
      assert.ok(p.learned > p.lanczos, JSON.stringify(p));
    }
    // 1200 s of 720p at 30 fps: learned's limit is passed, so lanczos (learned named is a 422, below).
    assert.equal(await price('video_upscale', { inputs: {}, duration_seconds: 1200 }), await price('video_upscale', { inputs: { method: 'lanczos' }, duration_seconds: 1200 }));
    // The longest 540p clip at 25 fps the learned path takes, and one minute more.
    const minutes = learnedMinutesAt540p();
    const at540 = (m: number) => ({ ...video(960, 540, m * 60), frameRate: 25, frames: m * 60 * 25 });
    const pricing = (info: MediaInfo) => ({ values: {}, media: { video: [info] }, durationHint: null });
    assert.equal(upscaleMethod(pricing(at540(minutes))), 'learned');
    assert.equal(upscaleMethod(pricing(at540(minutes + 1))), 'lanczos');
    assert.ok(minutes >= 30, `${minutes} minutes`);
  });

  test('learned, 1916x1076 at 240 fps for 1 s: its 240 frames x 2.06 MP are priced, and held', async () => {
    // The network's part: 1 Spark per started 4.5 input frame-megapixels (240 x 2.0616 = 494.8 -> 110),
    // on the lanczos price of its frames: 240 x (2.06 + 2.08 MP out) against 300 x (0.92 + 2.07) for 2 -> 3.
    const sparks = await price('video_upscale', { inputs: { video: [ids.fast], method: 'learned' } });
    assert.equal(sparks, 113);
    await holdAndCharge('video_upscale', { video: [ids.fast], method: 'learned' }, sparks, 'cancel');
  });

  test('lanczos, 1200 frames at 240 fps: priced by their pixels against the 300 frames a 10 s price pays for', async () => {
    // To 4K: 1200 x (0.02 MP in + 8.29 out) against 300 x (2.07 + 8.29) for 6 Sparks: 19.2 -> 20.
    assert.equal(await price('video_upscale', { inputs: { video: [ids.wide], target: '4k', method: 'lanczos' } }), 20);
    // To 1080p: 1200 x (0.02 + 2.07) against 300 x (0.92 + 2.07) for 2: 5.6 -> 6.
    assert.equal(await price('video_upscale', { inputs: { video: [ids.wide], target: '1080p', method: 'lanczos' } }), 6);
    // Ordinary frames keep the price per started 10 s: 30 frames at 60 fps, 0.5 s.
    assert.equal(await price('video_upscale', { inputs: { video: [ids.small], method: 'lanczos' } }), 2);
    assert.equal(await price('video_upscale', { inputs: { video: [ids.small], target: '4k', method: 'lanczos' } }), 6);
  });

  test('a learned run costs its estimate: estimate = hold = charge', async () => {
    const inputs = { video: [ids.small], method: 'learned' };
    // 30 frames x 0.0144 MP through the network: 1 Spark, on the lanczos price of 2.
    const sparks = await price('video_upscale', { inputs });
    assert.equal(sparks, 3);
    await holdAndCharge('video_upscale', inputs, sparks, 'succeed');
  });

  test('over a bound: 422 on the video slot, at estimate and at start', async () => {
    // Frames of 37.3 MP out: more than any video may hold (8192 x 4320), whatever the method.
    for (const send of [estimate, start]) {
      for (const method of ['lanczos', 'learned']) {
        assertFieldErrors(await send(s, team.key, 'video_upscale', { inputs: { video: [ids.narrow], method } }), [{ loc: ['body', 'inputs', 'video'], code: 'too_large' }]);
      }
    }
    // Learned work past what its time limit covers: the 240 fps clip's row, 60 s long (14,400 frames of 2.06 MP).
    const longer = await uploadReady(s, team.key, await fs.readFile(path.join(dir, 'fast.mp4')), 'fast-60s.mp4', 'video/mp4');
    await s.database.db.pool.query('UPDATE files SET duration_seconds = 60, video_frames = 14400 WHERE id = $1::uuid', [longer]);
    for (const send of [estimate, start]) {
      const res = await send(s, team.key, 'video_upscale', { inputs: { video: [longer], method: 'learned' } });
      assertFieldErrors(res, [{ loc: ['body', 'inputs', 'video'], code: 'too_large' }]);
      assert.match(res.body, /method lanczos/);
    }
    // lanczos takes it, priced by its frames: 14,400 x (2.06 + 2.08 MP) against 300 x 2.99 MP for 2 Sparks;
    // and so does a run that names no method (the default falls back where learned cannot take it).
    assert.equal(await price('video_upscale', { inputs: { video: [longer], method: 'lanczos' } }), 133);
    assert.equal(await price('video_upscale', { inputs: { video: [longer] } }), 133);
  });

  test('duration_seconds alone prices the target\'s reference clip at 30 fps; learned work past its limit is 422 at duration_seconds', async () => {
    // 95 s of 1280x720 (1080p) or 1920x1080 (4K) at 30 fps: the per-10 s price, unchanged.
    assert.equal(await price('video_upscale', { inputs: { method: 'lanczos' }, duration_seconds: 95 }), 20);
    assert.equal(await price('video_upscale', { inputs: { target: '4k', method: 'lanczos' }, duration_seconds: 95 }), 60);
    // learned adds 1 Spark per started 4.5 MP of input frames: 2,850 x 0.9216 MP -> 584.
    assert.equal(await price('video_upscale', { inputs: { method: 'learned' }, duration_seconds: 95 }), 20 + 584);
    // 1200 s of 720p at 30 fps is past what learned's 24 h limit covers: said at the hint.
    const res = await estimate(s, team.key, 'video_upscale', { inputs: { method: 'learned' }, duration_seconds: 1200 });
    assertFieldErrors(res, [{ loc: ['body', 'duration_seconds'], code: 'too_large' }]);
    assert.match(res.body, /method lanczos/);
    // A given file wins over the hint: its own frames price it.
    assert.equal(await price('video_upscale', { inputs: { video: [ids.fast], method: 'learned' }, duration_seconds: 95 }), await price('video_upscale', { inputs: { video: [ids.fast], method: 'learned' } }));
  });
});

describe('image_upscale is priced by decoded bytes (item 7)', () => {
  test('a 16-bit RGBA PNG costs 8/3 of the same-size 8-bit RGB JPEG per megapixel, and its run costs its estimate', async () => {
    const jpeg = await price('image_upscale', { inputs: { image: [ids.jpeg] } });
    const png16 = await price('image_upscale', { inputs: { image: [ids.png16] } });
    // 2 + 1 per started 3 MB of decoded pixels: 3 MP x 3 bytes -> 3; 3 MP x 8 bytes -> 8.
    assert.equal(jpeg, 5);
    assert.equal(png16, 10);
    await holdAndCharge('image_upscale', { image: [ids.png16], method: 'lanczos' }, png16, 'succeed');
  });

  test('more than 8 bytes a pixel (a float RGB TIFF): 422 on the image slot, at estimate and at start', async () => {
    for (const send of [estimate, start]) {
      const res = await send(s, team.key, 'image_upscale', { inputs: { image: [ids.float] } });
      assertFieldErrors(res, [{ loc: ['body', 'inputs', 'image'], code: 'too_large' }]);
      assert.match(res.body, /bytes/);
    }
  });
});

describe('image_upscale scale 4 is priced and bounded by its output (issue 38)', () => {
  test('the price follows the output: 4x costs what four times the pixels cost, and a run costs its estimate', async () => {
    // 2 + 1 per started 12 MB of decoded output: 3 MP in is 12 MP out at 2x, 48 MP at 4x.
    assert.equal(await price('image_upscale', { inputs: { image: [ids.jpeg], scale: 2 } }), 5);
    assert.equal(await price('image_upscale', { inputs: { image: [ids.jpeg], scale: 4 } }), 2 + 12);
    assert.equal(await price('image_upscale', { inputs: { image: [ids.png16], scale: 4 } }), 2 + 32);
    // 240x180 at 4x: 960x720 out, 0.69 MP of 8-bit RGB -> 1 Spark over the 2.
    const small = await price('image_upscale', { inputs: { image: [ids.small4], scale: 4, method: 'lanczos' } });
    assert.equal(small, 3);
    await holdAndCharge('image_upscale', { image: [ids.small4], scale: 4, method: 'lanczos' }, small, 'succeed');
  });

  test('an input whose 4x output would pass 8192 px a side: 422 on the image slot at scale 4 only', async () => {
    assert.equal(await price('image_upscale', { inputs: { image: [ids.wide2100], scale: 2 } }), 3);
    for (const send of [estimate, start]) {
      const res = await send(s, team.key, 'image_upscale', { inputs: { image: [ids.wide2100], scale: 4 } });
      assertFieldErrors(res, [{ loc: ['body', 'inputs', 'image'], code: 'too_large' }]);
      assert.match(res.body, /8400 x 240 px/);
      assert.match(res.body, /inputs up to 2048 px at scale 4/);
    }
  });

  test('scale takes 2 and 4 only: 3 and 2.5 are not a choice, 8 is out of range, "4" is not a number; nothing is held', async () => {
    const before = await s.database.db.pool.query<{ n: string }>('SELECT count(*)::text AS n FROM ledger_entries WHERE team_id = $1::uuid', [team.teamId]);
    for (const [value, code] of [[3, 'invalid_choice'], [2.5, 'invalid_choice'], [8, 'out_of_range'], [0, 'out_of_range'], ['4', 'wrong_type']] as const) {
      for (const send of [estimate, start]) {
        const res = await send(s, team.key, 'image_upscale', { inputs: { image: [ids.small4], scale: value } });
        assertFieldErrors(res, [{ loc: ['body', 'inputs', 'scale'], code }]);
        if (code === 'invalid_choice') assert.match(res.body, /must be one of 2, 4/);
      }
    }
    const afterCount = await s.database.db.pool.query<{ n: string }>('SELECT count(*)::text AS n FROM ledger_entries WHERE team_id = $1::uuid', [team.teamId]);
    assert.equal(afterCount.rows[0]!.n, before.rows[0]!.n);
  });
});
