import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { resolveMediaBinaries } from '../src/media/binaries.js';
import { sha256File, storeOutputs } from '../src/runs/outputs.js';
import { LocalStorage } from '../src/storage/local.js';
import { UrlSigner } from '../src/storage/signing.js';
import { ToolError, type EncodedVideo, type ToolOutput } from '../src/tools/manifest.js';
import { scaledWidth } from '../src/tools/video/common.js';
import { runTransition } from '../src/tools/video/transition.js';
import { runUpscale } from '../src/tools/video/upscale.js';
import { makeClip, videoRunContext } from './helpers/videos.js';

// Video outputs the encoder vouches for (ToolOutput.encodedVideo): the tools say what their own
// ffmpeg wrote, and the store step holds the file's header to it instead of decoding a frame.

const media = resolveMediaBinaries();
/** ffmpeg that cannot start: the decode path's one-frame decode fails, the header check never runs it. */
const noFfmpeg = { ...media, ffmpeg: '/nonexistent/ffmpeg' };
let dir: string;
let storage: LocalStorage;
const clip: Record<string, string> = {};

before(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'toolrun-vouch-'));
  storage = new LocalStorage(path.join(dir, 'storage'), 'http://127.0.0.1:1', new UrlSigner(randomBytes(32)));
  [clip.red, clip.blue, clip.small] = await Promise.all([
    makeClip(dir, 'red.mp4', { color: 'red', width: 320, height: 180, seconds: 2, fps: 25, tone: 440 }),
    makeClip(dir, 'blue.mp4', { color: 'blue', width: 320, height: 180, seconds: 2, fps: 25, tone: 660 }),
    makeClip(dir, 'small.mp4', { color: 'yellow', width: 200, height: 112, seconds: 1, fps: 24, tone: 500 }),
  ]);
});
after(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

async function store(out: ToolOutput, bins = noFfmpeg) {
  const runId = randomUUID();
  const teamId = randomUUID();
  const rows = await storeOutputs([out], { teamId, runId, storage, media: bins, maxBytes: 1 << 30 });
  return { rows, runId, teamId };
}

/** A copy of the output's file (the store step moves what it stores), with the given vouch. */
async function copyWith(out: ToolOutput, encodedVideo: EncodedVideo | undefined, mimeType = out.mimeType): Promise<ToolOutput> {
  const file = path.join(dir, `${randomUUID()}.mp4`);
  await fs.copyFile(out.path, file);
  return { ...out, path: file, mimeType, ...(encodedVideo ? { encodedVideo } : { encodedVideo: undefined }) };
}

const refused = (err: Error) => err instanceof ToolError && /unreadable output|bytes its encoder made/.test(err.message);

describe('video outputs the encoder vouches for', () => {
  test('video_transition: vouched with the plan (size, codec, exact frames, length), stored from its header alone', async () => {
    const d = await videoRunContext(dir, 'clips', [clip.red!, clip.blue!], { style: 'dissolve', duration_seconds: 1 });
    const [out] = await runTransition(d.ctx);
    const vouch = out!.encodedVideo;
    assert.ok(vouch, 'the transition vouches for its output');
    assert.deepEqual({ ...vouch, bytes: 0 }, { bytes: 0, width: 320, height: 180, codec: 'h264', seconds: { min: 3, max: 3 }, frames: 75 });
    assert.equal(vouch.bytes, (await fs.stat(out!.path)).size);

    // Refusals: each field of the vouch is held against the file.
    const bad: [string, EncodedVideo, string?][] = [
      ['a file of another length than the encoder wrote', { ...vouch, bytes: vouch.bytes + 1 }],
      ['another width', { ...vouch, width: 322 }],
      ['another height', { ...vouch, height: 182 }],
      ['another codec', { ...vouch, codec: 'hevc' }],
      ['another frame count', { ...vouch, frames: 74 }],
      ['another length', { ...vouch, seconds: { min: 3.5, max: 4 } }],
      ['a length under the range', { ...vouch, seconds: { min: 2, max: 2.5 } }],
      ['another type than claimed', vouch, 'video/webm'],
    ];
    for (const [why, v, mime] of bad) {
      const copy = await copyWith(out!, v, mime);
      const runId = randomUUID();
      await assert.rejects(storeOutputs([copy], { teamId: randomUUID(), runId, storage, media: noFfmpeg, maxBytes: 1 << 30 }), refused, why);
    }
    // A file cut short (its moov is at the front, +faststart: the header still reads) fails on its length.
    const cut = await copyWith(out!, vouch);
    await fs.truncate(cut.path, vouch.bytes - 1000);
    await assert.rejects(store(cut), (err: Error) => err instanceof ToolError && /bytes its encoder made/.test(err.message), 'a truncated file');
    // Garbage of the vouched length: no readable header.
    const garbage = await copyWith(out!, vouch);
    await fs.writeFile(garbage.path, randomBytes(vouch.bytes));
    await assert.rejects(store(garbage), refused, 'garbage');

    // Without the vouch the same file takes the decode path, which needs ffmpeg: refused here.
    await assert.rejects(store(await copyWith(out!, undefined)), /does not decode/, 'the decode path runs ffmpeg');
    const sha = await sha256File(out!.path);
    const { rows, runId, teamId } = await store(out!);
    assert.equal(rows.length, 1);
    const row = rows[0]!;
    assert.deepEqual([row.width, row.height, row.sizeBytes, row.sha256], [320, 180, vouch.bytes, sha]);
    assert.ok(Math.abs((row.durationSeconds ?? 0) - 3) <= 0.05, `duration ${row.durationSeconds}`);
    assert.equal(row.storageKey.startsWith(`outputs/${teamId}/${runId}/`), true);
  });

  test('video_upscale lanczos: vouched with the target size and the input length (frames pass through); stored', async () => {
    const d = await videoRunContext(dir, 'video', [clip.small!], { target: '1080p', method: 'lanczos' });
    const [out] = await runUpscale(d.ctx);
    const vouch = out!.encodedVideo!;
    assert.deepEqual([vouch.width, vouch.height, vouch.codec, vouch.frames], [1928, 1080, 'h264', null]);
    // Measured 1 s less the measuring tolerance .. priced 1 s plus what ffmpeg may read past it and a frame.
    assert.ok(Math.abs(vouch.seconds.min - 0.5) < 0.05 && Math.abs(vouch.seconds.max - (1.5 + 1 / 24)) < 0.05, JSON.stringify(vouch.seconds));
    const { rows } = await store(out!);
    assert.deepEqual([rows[0]!.width, rows[0]!.height], [1928, 1080]);
  });

  test('video_upscale learned: vouched with the frames given to the encoder; stored', async () => {
    const d = await videoRunContext(dir, 'video', [clip.small!], { target: '1080p', method: 'learned' });
    const [out] = await runUpscale(d.ctx);
    const vouch = out!.encodedVideo!;
    assert.deepEqual([vouch.width, vouch.height, vouch.frames], [1928, 1080, 24]);
    assert.deepEqual(vouch.seconds, { min: 1, max: 1 });
    const { rows } = await store(out!);
    assert.deepEqual([rows[0]!.width, rows[0]!.height], [1928, 1080]);
  });

  test("scaledWidth is ffmpeg's scale=-2:h width", () => {
    assert.equal(scaledWidth(320, 180, 1080), 1920);
    // 1080 * 200 / 112 = 1928.6, halved 964.3: rounded, then doubled (the upscales above produce it).
    assert.equal(scaledWidth(200, 112, 1080), 1928);
    assert.equal(scaledWidth(160, 90, 180), 320);
    assert.equal(scaledWidth(640, 480, 2160), 2880);
  });
});
