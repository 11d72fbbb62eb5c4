// Limits IV: hostile videos through the real flow (upload, complete, run on a worker with real
// ffmpeg). Hours of video in a few KB, a frame of 81 megapixels, text named .mp4, an empty file,
// audio where video is wanted: refused at complete or at start with a 422 naming the file and
// why. A truncated file that passes the probe, an output over TOOLRUN_MAX_OUTPUT_BYTES and a run
// over its time limit fail cleanly, release their hold, and leave no ffmpeg process behind.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { RunWorker } from '../src/runs/worker.js';
import { ledgerDrift } from '../src/sparks/ledger.js';
import { videoUpscale } from '../src/tools/catalog/video-upscale.js';
import { builtinTools, createToolRegistry } from '../src/tools/registry.js';
import { assertError } from './helpers/error-envelope.js';
import { makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { audioOnly, hugeFrameVideo, longVideo, truncatedVideo } from './helpers/hostile-media.js';
import { makeMp4 } from './helpers/media.js';
import { assertFieldErrors, call, estimate, start, teamState, uploadFile, uploadReady, type RunJson } from './helpers/runs.js';
import { assertSettledOnce, waitFinal, waitFor } from './helpers/runs-harness.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { ffmpegChildren } from './helpers/videos.js';
import { startTestWorker } from './helpers/worker.js';

const MAX_OUTPUT = 128 * 1024;
/** The real video_upscale runner under a 2 s time limit, standing in for a run that outlives its limit. */
const upscaleShortLimit = { ...videoUpscale, id: 'video_upscale_2s', productId: 'video_upscale_2s', timeoutSeconds: 2 };

let dir: string;
let s: TestServer;
let worker: RunWorker;
let team: TeamFixture;
const tools = createToolRegistry([...builtinTools(), upscaleShortLimit]);

before(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'toolrun-limits-video-'));
  s = await startTestServer({ tools, env: { TOOLRUN_WORKER_POLL_MS: '200', TOOLRUN_MAX_OUTPUT_BYTES: String(MAX_OUTPUT) } });
  worker = await startTestWorker(s, tools, { concurrency: 1 });
  team = await makeTeam(s.database.db, { plan: 'pro', sparks: 10_000, rate: 300 });
});
after(async () => {
  await worker.stop(1000);
  await s.close();
  await fs.rm(dir, { recursive: true, force: true });
});

const VIDEO_SLOT = ['body', 'inputs', 'video'];

/** A run of a rejected or unsuitable file is a 422 on the video slot's entry, with this message. */
async function refusedAtStart(fileId: string, code: string, why: RegExp): Promise<void> {
  for (const send of [estimate, start]) {
    const res = await send(s, team.key, 'video_upscale', { inputs: { video: [fileId] } });
    assertFieldErrors(res, [{ loc: VIDEO_SLOT, code }]);
    assert.match(res.json<{ error: { errors: { message: string }[] } }>().error.errors[0]!.message, why);
  }
}

/** Starts a run and waits (watching for ffmpeg children meanwhile) until it is final and settled. */
async function runToEnd(tool: string, inputs: Record<string, unknown>): Promise<{ run: RunJson; ffmpegSeen: number }> {
  const res = await start(s, team.key, tool, { inputs });
  assert.equal(res.statusCode, 202, res.body);
  const id = res.json<RunJson>().id;
  let ffmpegSeen = 0;
  const watch = setInterval(() => (ffmpegSeen = Math.max(ffmpegSeen, ffmpegChildren().length)), 25);
  try {
    const state = await waitFinal(s.database.db.pool, id, 180_000);
    await assertSettledOnce(s.database.db.pool, state);
  } finally {
    clearInterval(watch);
  }
  return { run: (await call(s, team.key, 'GET', `/v1/runs/${id}`)).json<RunJson>(), ffmpegSeen };
}

/** No ffmpeg child of this process (the worker's) is left once a run is over. */
async function noFfmpegLeft(): Promise<void> {
  await waitFor('every ffmpeg child to be gone', async () => (ffmpegChildren().length === 0 ? true : undefined), 10_000);
}

describe('refused before a run', () => {
  test('five hours in 2 KB, an 81-megapixel frame, text named .mp4: rejected at complete, and a run naming one is a 422 saying why', async () => {
    const cases: [string, Buffer, string, RegExp][] = [
      ['long.mp4', await fs.readFile(await longVideo(dir, 5)), 'video/mp4', /the file is 5 h long; at most 4 h are accepted/],
      ['huge.mov', await fs.readFile(await hugeFrameVideo(dir, 9000, 9000)), 'video/quicktime', /frames are 9000 x 9000 px \(81 MP\); at most 35\.4 MP/],
      ['clip.mp4', Buffer.from('this is not a video\n'.repeat(50)), 'video/mp4', /unrecognised file type/],
    ];
    const good = await uploadReady(s, team.key, await makeMp4({ seconds: 1, width: 160, height: 90 }), 'good.mp4', 'video/mp4');
    for (const [name, bytes, mime, why] of cases) {
      assert.ok(bytes.length < 1024 * 1024, `${name}: ${bytes.length} bytes`);
      const file = await uploadFile(s, team.key, bytes, name, mime);
      assert.equal(file.status, 'rejected', name);
      await refusedAtStart(file.id, 'file_not_ready', why);
      const clips = await start(s, team.key, 'video_transition', { inputs: { clips: [good, file.id] } });
      assertFieldErrors(clips, [{ loc: ['body', 'inputs', 'clips'], code: 'file_not_ready' }]);
      assert.match(clips.json<{ error: { errors: { message: string }[] } }>().error.errors[0]!.message, /^item 2 \(index 1\): the file was rejected: /);
    }
  });

  test('three hours (under the limit) are accepted and priced by their length: a team short of that is refused 402, nothing held', async () => {
    const id = await uploadReady(s, team.key, await fs.readFile(await longVideo(dir, 3)), 'three-hours.mp4', 'video/mp4');
    const est = await estimate(s, team.key, 'video_upscale', { inputs: { video: [id], method: 'lanczos' } });
    assert.equal(est.statusCode, 200, est.body);
    assert.equal(est.json<{ sparks: number }>().sparks, (3 * 3600) / 10 * 2);
    const poor = await makeTeam(s.database.db, { plan: 'pro', sparks: 1000, rate: 300 });
    const theirs = await uploadReady(s, poor.key, await fs.readFile(await longVideo(dir, 3)), 'three-hours.mp4', 'video/mp4');
    const res = await start(s, poor.key, 'video_upscale', { inputs: { video: [theirs], method: 'lanczos' } });
    const err = assertError(res, 402, 'insufficient_sparks');
    assert.deepEqual(err.details, { needed_sparks: 2160, available_sparks: 1000 });
    assert.equal((await teamState(s.database.db.pool, poor.teamId)).runs, 0);
  });

  test('an empty file cannot be uploaded; audio alone in a video slot is a 422 wrong_media_kind', async () => {
    const empty = await call(s, team.key, 'POST', '/v1/files/upload-url', { file_name: 'empty.mp4', mime_type: 'video/mp4', size_bytes: 0 });
    const err = assertError(empty, 422, 'invalid_request');
    assert.deepEqual(err.errors?.map((e) => e.loc), [['body', 'size_bytes']]);
    const tone = await uploadReady(s, team.key, await fs.readFile(await audioOnly(dir, 2)), 'tone.mp4', 'video/mp4');
    await refusedAtStart(tone, 'wrong_media_kind', /is an? audio file; this slot takes video/);
  });
});

describe('bounded while running', () => {
  test('a truncated video whose head plays is accepted, then its run fails cleanly naming it, the hold released', async () => {
    const id = await uploadReady(s, team.key, await truncatedVideo(dir, 4, 0.5), 'cut.mp4', 'video/mp4');
    // lanczos: learned (the default) can reach this suite's 128 KiB output cap before its decoder
    // reaches the cut, which fails the run as cleanly but under the cap's message.
    const { run } = await runToEnd('video_upscale', { video: [id], method: 'lanczos' });
    assert.equal(run.status, 'failed');
    assert.match(run.error ?? '', /^The video could not be processed: the video: /);
    assert.doesNotMatch(run.error ?? '', /\/tmp|\/work|toolrun-/);
    assert.deepEqual(run.outputs, []);
    await noFfmpegLeft();
  });

  test('an output over TOOLRUN_MAX_OUTPUT_BYTES fails the run with the limit named; nothing is kept, the hold released', async () => {
    const id = await uploadReady(s, team.key, await makeMp4({ seconds: 2, width: 320, height: 180 }), 'two.mp4', 'video/mp4');
    const { run } = await runToEnd('video_upscale', { video: [id] });
    assert.equal(run.status, 'failed');
    assert.equal(run.error, 'The output would be larger than the 128 KiB limit.');
    assert.equal(run.cost_sparks, 0);
    assert.deepEqual(run.outputs, []);
    await noFfmpegLeft();
  });

  test('a run past its time limit is stopped: ffmpeg is killed, nothing lingers, the hold is released', async () => {
    const id = await uploadReady(s, team.key, await makeMp4({ seconds: 30, width: 320, height: 180 }), 'thirty.mp4', 'video/mp4');
    // A worker without the small output limit: on a fast machine a 4K encode would pass 128 KiB
    // before 2 s, and the output limit would stop the run before the time limit could.
    await worker.stop(1000);
    worker = await startTestWorker({ ...s, config: { ...s.config, runs: { ...s.config.runs, maxOutputBytes: 4 * 1024 ** 3 } } }, tools, { concurrency: 1 });
    const before = (await teamState(s.database.db.pool, team.teamId)).balance;
    const { run, ffmpegSeen } = await runToEnd('video_upscale_2s', { video: [id], target: '4k' });
    assert.equal(run.status, 'failed');
    assert.equal(run.error, 'The run took longer than the 2 s limit of video_upscale_2s and was stopped.');
    assert.ok(ffmpegSeen >= 1, 'ffmpeg was working when the limit struck');
    await noFfmpegLeft();
    assert.equal((await teamState(s.database.db.pool, team.teamId)).balance, before);
    assert.deepEqual(await ledgerDrift(s.database.db.pool), []);
  });
});
