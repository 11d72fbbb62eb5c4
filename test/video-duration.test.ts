// Issue 13, item 1: a video's length is what its streams hold, not what its container's header
// says. A Matroska file whose Duration element is patched to 1 s is stored, priced, limited and
// run at the length its packets span; and a file row that still carries a header's shorter claim
// (as rows probed before this change may) bounds every ffmpeg run to that priced length.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { resolveMediaBinaries } from '../src/media/binaries.js';
import { LENGTH_TOLERANCE_SECONDS, measureLength } from '../src/media/measure.js';
import { DEFAULT_PROBE_LIMITS, OUTPUT_PROBE_LIMITS, probeLocalFile } from '../src/media/probe.js';
import { storeOutputs } from '../src/runs/outputs.js';
import type { RunWorker } from '../src/runs/worker.js';
import { builtinTools, createToolRegistry } from '../src/tools/registry.js';
import { makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { mkvClaiming } from './helpers/hostile-media.js';
import { makeMp4 } from './helpers/media.js';
import { assertFieldErrors, call, estimate, start, uploadFile, uploadReady, type EstimateJson, type RunJson } from './helpers/runs.js';
import { assertSettledOnce, waitFinal } from './helpers/runs-harness.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { startTestWorker } from './helpers/worker.js';

/** Twelve seconds whose header says one. */
const REAL = 12;
const CLAIMED = 1;

let dir: string;
let s: TestServer;
let worker: RunWorker;
let team: TeamFixture;
let lying: Buffer;
const tools = createToolRegistry(builtinTools());
const media = resolveMediaBinaries();

type RunWithOutputs = RunJson & { outputs: { duration_seconds: number | null }[] };

before(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'toolrun-video-duration-'));
  s = await startTestServer({ tools, env: { TOOLRUN_WORKER_POLL_MS: '200' } });
  worker = await startTestWorker(s, tools, { concurrency: 1 });
  team = await makeTeam(s.database.db, { plan: 'pro', sparks: 10_000, rate: 300 });
  lying = await mkvClaiming(dir, 'lying.mkv', { seconds: REAL, claims: CLAIMED });
});
after(async () => {
  await worker.stop(1000);
  await s.close();
  await fs.rm(dir, { recursive: true, force: true });
});

async function storedDuration(fileId: string): Promise<number | null> {
  const { rows } = await s.database.db.pool.query<{ duration_seconds: number | null }>('SELECT duration_seconds FROM files WHERE id = $1::uuid', [fileId]);
  return rows[0]?.duration_seconds ?? null;
}

async function runToEnd(tool: string, inputs: Record<string, unknown>): Promise<RunWithOutputs> {
  const res = await start(s, team.key, tool, { inputs });
  assert.equal(res.statusCode, 202, res.body);
  const state = await waitFinal(s.database.db.pool, res.json<RunJson>().id, 120_000);
  await assertSettledOnce(s.database.db.pool, state);
  return (await call(s, team.key, 'GET', `/v1/runs/${state.id}`)).json<RunWithOutputs>();
}

function near(actual: number | null | undefined, expected: number, within: number, what: string): void {
  assert.ok(typeof actual === 'number' && Math.abs(actual - expected) <= within, `${what}: ${actual}, expected ${expected} ± ${within}`);
}

describe('a container that claims less than its streams hold', () => {
  test('complete stores the measured 12 s, not the header 1 s; estimates and runs are priced and made from it', async () => {
    const a = await uploadReady(s, team.key, lying, 'lying.mkv', 'video/x-matroska');
    const b = await uploadReady(s, team.key, lying, 'lying-too.mkv', 'video/x-matroska');
    near(await storedDuration(a), REAL, 0.1, 'stored duration_seconds');
    // video_upscale: 2 Sparks per started 10 s; 12 s is 4 (the header's 1 s would be 2).
    const up = await estimate(s, team.key, 'video_upscale', { inputs: { video: [a], method: 'lanczos' } });
    assert.equal(up.statusCode, 200, up.body);
    assert.equal(up.json<EstimateJson>().sparks, 4);
    // video_transition: 2 per clip plus 1 per started 10 s of input: 4 + ceil(24 / 10) = 7 (not 5).
    const joined = await estimate(s, team.key, 'video_transition', { inputs: { clips: [a, b], duration_seconds: 0.5 } });
    assert.equal(joined.json<EstimateJson>().sparks, 7);
    // The run reads the clips' length from their packets too: both whole clips are joined.
    const run = await runToEnd('video_transition', { clips: [a, b], duration_seconds: 0.5 });
    assert.equal(run.status, 'succeeded', run.error ?? '');
    assert.equal(run.cost_sparks, 7);
    near(run.outputs[0]?.duration_seconds, 2 * REAL - 0.5, 0.3, 'joined output');
  });

  test('the length limit counts the streams: five hours claiming 1 s are rejected at complete, and a run naming them is a 422 saying why', async () => {
    const bytes = await mkvClaiming(dir, 'five-hours.mkv', { seconds: 5 * 3600, claims: CLAIMED, fps: 1 / 3600, audio: false });
    assert.ok(bytes.length < 64 * 1024, `${bytes.length} bytes`);
    const file = await uploadFile(s, team.key, bytes, 'five-hours.mkv', 'video/x-matroska');
    assert.equal(file.status, 'rejected');
    const res = await start(s, team.key, 'video_upscale', { inputs: { video: [file.id] } });
    assertFieldErrors(res, [{ loc: ['body', 'inputs', 'video'], code: 'file_not_ready' }]);
    assert.match(res.json<{ error: { errors: { message: string }[] } }>().error.errors[0]!.message, /^item 1 \(index 0\): .*streams run for more than 4 h; at most 4 h are accepted/);
  });

  test('frames squeezed into a short timeline are refused at complete: the price follows the length, the work the frames', async () => {
    // 800 frames with timestamps 2.5 ms apart: 2 s of length, 400 frames a second.
    const squeezed = await mkvClaiming(dir, 'squeezed.mkv', { seconds: 2, claims: 2, fps: 400, audio: false });
    const file = await uploadFile(s, team.key, squeezed, 'squeezed.mkv', 'video/x-matroska');
    assert.equal(file.status, 'rejected');
    assert.match(file.problem ?? '', /^the video holds 800 frames in 2 s \(400 a second\); at most 240 frames a second are accepted$/);
    // High-frame-rate footage within the bound is accepted as it is.
    const fast = await mkvClaiming(dir, 'fast.mkv', { seconds: 2, claims: 2, fps: 120, audio: false });
    const ok = await uploadFile(s, team.key, fast, 'fast.mkv', 'video/x-matroska');
    assert.equal(ok.status, 'ready');
  });

  test('audio alone is held to the same rule: measured at 12 s, and refused by a 5 s limit its header would pass', async () => {
    const file = path.join(dir, 'lying-tone.mka');
    await fs.writeFile(file, await mkvClaiming(dir, 'tone.mka', { seconds: REAL, claims: CLAIMED, video: false }));
    const open = await probeLocalFile(file, media, DEFAULT_PROBE_LIMITS);
    assert.equal(open.kind, 'audio');
    near(open.durationSeconds, REAL, 0.1, 'audio length');
    const limited = await probeLocalFile(file, media, { ...DEFAULT_PROBE_LIMITS, maxDurationSeconds: 5 });
    assert.equal(limited.decodable, false);
    assert.equal(limited.problem, "the file's streams run for more than 5 s; at most 5 s are accepted");
    const video = path.join(dir, 'lying-limited.mkv');
    await fs.writeFile(video, lying);
    const refused = await probeLocalFile(video, media, { ...DEFAULT_PROBE_LIMITS, maxDurationSeconds: 5 });
    assert.equal(refused.problem, "the file's streams run for more than 5 s; at most 5 s are accepted");
  });

  test('the packet scan is bounded: it stops past a length bound, and at its time limit', async () => {
    const file = path.join(dir, 'scan.mkv');
    await fs.writeFile(file, lying);
    const scan = { command: (args: string[]): [string, string[]] => [media.ffprobe, args], inputArgs: [], source: file, streams: [{ index: 0, frameRate: 4 }] };
    const whole = await measureLength({ ...scan, timeoutMs: 60_000, stopAfterSeconds: null });
    assert.equal(whole.kind, 'measured');
    near(whole.kind === 'measured' ? whole.seconds : null, REAL, 0.1, 'video stream');
    const over = await measureLength({ ...scan, timeoutMs: 60_000, stopAfterSeconds: 5 });
    assert.equal(over.kind, 'over');
    // No process starts, demuxes and exits within a millisecond.
    assert.deepEqual(await measureLength({ ...scan, timeoutMs: 1, stopAfterSeconds: null }), { kind: 'timeout' });
  });

  test('tool outputs are probed with the decode and the packet scan started at once, to the same verdicts', async () => {
    const file = path.join(dir, 'eager.mkv');
    await fs.writeFile(file, lying);
    const ordered = { ...OUTPUT_PROBE_LIMITS, eager: false };
    const eager = await probeLocalFile(file, media);
    assert.equal(eager.decodable, true, eager.problem ?? '');
    assert.deepEqual(eager, await probeLocalFile(file, media, ordered));
    near(eager.durationSeconds, REAL, 0.1, 'eager probe');
    // Audio alone in a container sniffed as video: the early video decode fails, the audio one is made.
    const audio = path.join(dir, 'audio-only.mkv');
    await new Promise<void>((resolve, reject) =>
      execFile(media.ffmpeg, ['-v', 'error', '-nostdin', '-f', 'lavfi', '-i', 'sine=frequency=440:duration=3', '-c:a', 'libopus', audio], (err) => (err ? reject(err) : resolve())),
    );
    const sound = await probeLocalFile(audio, media);
    assert.equal(sound.mime?.startsWith('video/'), true, `sniffed as ${sound.mime}`);
    assert.deepEqual([sound.kind, sound.decodable], ['audio', true], sound.problem ?? '');
    assert.deepEqual(sound, await probeLocalFile(audio, media, ordered));
    // A tool's usual output (H.264 + AAC MP4, moov first), whole and cut short in its media data:
    // the early decode and scan skip the stream analysis, and agree with the ordered probe.
    const mp4 = path.join(dir, 'output.mp4');
    await new Promise<void>((resolve, reject) =>
      execFile(
        media.ffmpeg,
        ['-v', 'error', '-nostdin', '-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=25', '-f', 'lavfi', '-i', 'sine=frequency=440', '-t', '4',
          '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-movflags', '+faststart', mp4],
        (err) => (err ? reject(err) : resolve()),
      ),
    );
    const whole = await probeLocalFile(mp4, media);
    assert.deepEqual([whole.kind, whole.decodable], ['video', true], whole.problem ?? '');
    near(whole.durationSeconds, 4, 0.1, 'mp4 output');
    assert.deepEqual(whole, await probeLocalFile(mp4, media, ordered));
    const cut = path.join(dir, 'cut.mp4');
    const bytes = await fs.readFile(mp4);
    await fs.writeFile(cut, bytes.subarray(0, Math.floor(bytes.length * 0.4)));
    assert.deepEqual(await probeLocalFile(cut, media), await probeLocalFile(cut, media, ordered));
    // Not media past a video's signature: refused either way.
    const junk = path.join(dir, 'junk.mkv');
    await fs.writeFile(junk, Buffer.concat([lying.subarray(0, 64), Buffer.alloc(4096, 7)]));
    const refused = await probeLocalFile(junk, media);
    assert.equal(refused.decodable, false);
    assert.deepEqual(refused, await probeLocalFile(junk, media, ordered));
  });

  test("an output's duration_seconds is its measured length", async () => {
    const file = path.join(dir, 'output.mkv');
    await fs.writeFile(file, lying);
    const runId = randomUUID();
    const [stored] = await storeOutputs([{ path: file, fileName: 'output.mkv', mimeType: 'video/x-matroska' }], {
      teamId: team.teamId,
      runId,
      storage: s.storage,
      media,
      maxBytes: 1 << 30,
    });
    near(stored?.durationSeconds, REAL, 0.1, 'output duration_seconds');
    await s.storage.delete(stored!.storageKey);
  });
});

describe('a file row that carries a shorter length than the file (probed before lengths were measured)', () => {
  /** A 12 s clip whose row says `priced` seconds, as a header's claim once put it there. */
  async function olderRow(priced: number): Promise<string> {
    const id = await uploadReady(s, team.key, await makeMp4({ seconds: REAL, width: 160, height: 90, fps: 5 }), 'older.mp4', 'video/mp4');
    await s.database.db.pool.query('UPDATE files SET duration_seconds = $2::float8 WHERE id = $1::uuid', [id, priced]);
    return id;
  }
  /** One frame at 5 fps: ffmpeg stops at the first frame at or past its `-t`. */
  const FRAME = 0.2;

  test('video_upscale reads no more than the priced 2 s (+ tolerance): its output stops there', async () => {
    const id = await olderRow(2);
    const run = await runToEnd('video_upscale', { video: [id], method: 'lanczos' });
    assert.equal(run.status, 'succeeded', run.error ?? '');
    assert.equal(run.cost_sparks, 2);
    const length = run.outputs[0]?.duration_seconds ?? NaN;
    assert.ok(length >= 2 && length <= 2 + LENGTH_TOLERANCE_SECONDS + FRAME, `output ${length} s for 2 s priced`);
  });

  test('video_transition takes each clip for its priced 3 s: 3 + 3 - 1 s of output, not 23', async () => {
    const [a, b] = [await olderRow(3), await olderRow(3)];
    const run = await runToEnd('video_transition', { clips: [a, b], duration_seconds: 1 });
    assert.equal(run.status, 'succeeded', run.error ?? '');
    assert.equal(run.cost_sparks, 5);
    const length = run.outputs[0]?.duration_seconds ?? NaN;
    assert.ok(length >= 5 - FRAME && length <= 5 + FRAME, `output ${length} s for 2 x 3 s priced`);
  });
});
