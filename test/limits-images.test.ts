// Limits III: hostile images through the real flow (upload, complete, run on a real worker
// process). Pixel floods and decompression bombs declared in a few bytes, a GIF of thousands of
// frames, an SVG with an entity bomb and a file reference, truncated data, bytes that lie about
// their type: each is rejected at complete (and a run naming it is a 422 on its slot saying why),
// refused by the tool's own pixel limit, or processed within bounded memory; a run that cannot
// finish fails cleanly and releases its hold. The worker process's memory is sampled throughout.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { ledgerDrift } from '../src/sparks/ledger.js';
import { makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { gifManyFrames, jpegClaiming, pngBomb, pngClaiming, svgHostile, webpClaiming } from './helpers/hostile-media.js';
import { makePng } from './helpers/media.js';
import { assertFieldErrors, call, estimate, start, teamState, uploadFile, uploadReady, type RunJson } from './helpers/runs.js';
import { assertSettledOnce, waitFinal, waitFor } from './helpers/runs-harness.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { testRegistry } from './helpers/test-tools.js';
import { killWorkerProcesses, WorkerProcess } from './helpers/worker-processes.js';

const MIB = 1024 * 1024;
/**
 * The worker's peak resident memory may grow this much over its idle size. The heaviest legitimate
 * case here, grading 36 megapixels, needs a 108 MB raw buffer plus libvips' decode and encode
 * buffers, on top of the two upscaling networks the runs before it loaded and keep (the GIF gets
 * the model for any input, the PNG the one for lossless inputs; one thread runs both and keeps one
 * loaded: 341-364 MiB measured, against 419-431 with one network in a thread of its own); decoding any
 * of the bombs whole would need gigabytes.
 */
const WORKER_GROWTH_BOUND = 512 * MIB;

let s: TestServer;
let worker: WorkerProcess;
let team: TeamFixture;

before(async () => {
  s = await startTestServer({ tools: testRegistry(), env: { TOOLRUN_WORKER_POLL_MS: '200' } });
  worker = await WorkerProcess.spawn(s);
  team = await makeTeam(s.database.db, { plan: 'pro', sparks: 10_000, rate: 300 });
});
after(async () => {
  await killWorkerProcesses();
  await s.close();
});

/** Resident memory of a process, in bytes, from /proc (VmRSS now, or VmHWM: the peak so far). */
function memoryOf(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  assert.ok(m, `${field} of ${pid}`);
  return Number(m[1]) * 1024;
}

/** Samples a process's resident memory every 50 ms until stopped; the peak comes from the kernel's own high-water mark. */
function sampleMemory(pid: number): { stop(): { samples: number; maxSampled: number; peak: number } } {
  let maxSampled = 0;
  let samples = 0;
  const timer = setInterval(() => {
    maxSampled = Math.max(maxSampled, memoryOf(pid, 'VmRSS'));
    samples++;
  }, 50);
  return {
    stop() {
      clearInterval(timer);
      return { samples, maxSampled, peak: memoryOf(pid, 'VmHWM') };
    },
  };
}

type Run = Omit<RunJson, 'outputs'> & { outputs: (RunJson['outputs'][number] & { width: number | null; height: number | null; mime_type: string; file_name: string })[] };

/** Starts a run, waits for its final state on the worker process, checks its settlement, returns it as the API shows it. */
async function runToEnd(tool: string, inputs: Record<string, unknown>): Promise<Run> {
  const started = await start(s, team.key, tool, { inputs });
  assert.equal(started.statusCode, 202, started.body);
  const id = started.json<RunJson>().id;
  const state = await waitFinal(s.database.db.pool, id, 180_000);
  await assertSettledOnce(s.database.db.pool, state);
  return (await call(s, team.key, 'GET', `/v1/runs/${id}`)).json<Run>();
}

describe('rejected at complete', () => {
  test('pixel floods, a bomb past the limit, a forged WebP, a hostile SVG and a truncated JPEG: rejected, and a run naming one is a 422 saying why', async () => {
    const photo = await sharp(await makePng(400, 300)).jpeg().toBuffer();
    const cases: [string, Buffer, string, RegExp][] = [
      ['flood.png', pngClaiming(50_000, 50_000), 'image/png', /more than 268402689 pixels/],
      ['flood.jpg', await jpegClaiming(60_000, 60_000), 'image/jpeg', /more than 268402689 pixels/],
      ['bomb.png', pngBomb(17_000, 17_000), 'image/png', /more than 268402689 pixels/],
      ['flood.webp', await webpClaiming(16_383, 16_383), 'image/webp', /does not decode/],
      // Not parsed at all: SVG is not a type the service takes, so neither the entities nor the file reference are ever read.
      ['logo.svg', svgHostile(), 'image/svg+xml', /application\/xml is not an image, video or audio file/],
      ['cut.jpg', photo.subarray(0, photo.length >> 1), 'image/jpeg', /does not decode: VipsJpeg: premature end/],
    ];
    const before = await teamState(s.database.db.pool, team.teamId);
    for (const [name, bytes, mime, why] of cases) {
      assert.ok(bytes.length < 128 * 1024, `${name} is small on disk (${bytes.length} bytes)`);
      const file = await uploadFile(s, team.key, bytes, name, mime);
      assert.equal(file.status, 'rejected', name);
      for (const send of [estimate, start]) {
        const res = await send(s, team.key, 'image_upscale', { inputs: { image: [file.id] } });
        assertFieldErrors(res, [{ loc: ['body', 'inputs', 'image'], code: 'file_not_ready' }]);
        const message = res.json<{ error: { errors: { message: string }[] } }>().error.errors[0]!.message;
        assert.match(message, /^item 1 \(index 0\): the file was rejected: /, name);
        assert.match(message, why, name);
        assert.doesNotMatch(message, /\/tmp|\/work|toolrun-/, `${name}: no server path in ${message}`);
      }
    }
    assert.deepEqual(await teamState(s.database.db.pool, team.teamId), before, 'nothing was held, charged or started');
  });
});

describe('accepted by the probe, refused by the tools', () => {
  test('a 256-megapixel PNG bomb of 31 KB is probed at complete, then every image tool refuses it with a 422 naming its limit', async () => {
    const bomb = pngBomb(16_000, 16_000);
    assert.ok(bomb.length < 64 * 1024);
    const id = await uploadReady(s, team.key, bomb, 'bomb.png', 'image/png');
    for (const [tool, limit] of [['image_upscale', /8192 px a side/], ['image_color_grade', /at most 64 megapixels/]] as const) {
      for (const send of [estimate, start]) {
        const res = await send(s, team.key, tool, { inputs: { image: [id] } });
        assertFieldErrors(res, [{ loc: ['body', 'inputs', 'image'], code: 'too_large' }]);
        assert.match(res.body, limit);
      }
    }
  });
});

describe('through a real worker process, its memory sampled', () => {
  test('a 5000-frame GIF, a PNG sent as a JPEG and a 36-megapixel bomb: processed one frame, by their real type, in bounded memory', async () => {
    const idle = memoryOf(worker.pid, 'VmRSS');
    const sampler = sampleMemory(worker.pid);
    const gif = await uploadReady(s, team.key, gifManyFrames(5000, 2000, 2000), 'frames.gif', 'image/gif');
    const lying = await uploadReady(s, team.key, await makePng(300, 200), 'photo.jpg', 'image/jpeg');
    const bomb = await uploadReady(s, team.key, pngBomb(6000, 6000), 'flat.png', 'image/png');

    // Only the first frame is read: on a 2000 x 2000 canvas, all 5000 would be 80 GB.
    const up = await runToEnd('image_upscale', { image: [gif] });
    assert.equal(up.status, 'succeeded', up.error ?? '');
    assert.deepEqual([up.outputs[0]!.width, up.outputs[0]!.height, up.outputs[0]!.mime_type, up.outputs[0]!.file_name], [4000, 4000, 'image/png', 'frames-upscaled.png']);
    const graded = await runToEnd('image_color_grade', { image: [gif], preset: 'bw_16mm' });
    assert.equal(graded.status, 'succeeded', graded.error ?? '');
    assert.deepEqual([graded.outputs[0]!.width, graded.outputs[0]!.height], [2000, 2000]);

    // Its name and declared type say JPEG; its bytes are PNG, and PNG is what comes out.
    const real = await runToEnd('image_upscale', { image: [lying] });
    assert.equal(real.status, 'succeeded', real.error ?? '');
    assert.deepEqual([real.outputs[0]!.mime_type, real.outputs[0]!.file_name, real.outputs[0]!.width], ['image/png', 'photo-upscaled.png', 600]);

    const flat = await runToEnd('image_color_grade', { image: [bomb], exposure: 1 });
    assert.equal(flat.status, 'succeeded', flat.error ?? '');
    assert.deepEqual([flat.outputs[0]!.width, flat.outputs[0]!.height], [6000, 6000]);

    const mem = sampler.stop();
    assert.ok(mem.samples > 10, `memory sampled ${mem.samples} times`);
    assert.ok(worker.alive, 'the worker process is still running');
    const growth = mem.peak - idle;
    process.stdout.write(`# worker memory: idle ${Math.round(idle / MIB)} MiB, peak ${Math.round(mem.peak / MIB)} MiB (sampled max ${Math.round(mem.maxSampled / MIB)} MiB)\n`);
    assert.ok(growth < WORKER_GROWTH_BOUND, `the worker grew by ${Math.round(growth / MIB)} MiB (bound ${WORKER_GROWTH_BOUND / MIB} MiB)`);
  });

  test('a 144-megapixel bomb given to brand_kit_extract fails the run cleanly, naming the file, and the hold is released', async () => {
    const id = await uploadReady(s, team.key, pngBomb(12_000, 12_000), 'huge.png', 'image/png');
    const before = (await teamState(s.database.db.pool, team.teamId)).balance;
    const run = await runToEnd('brand_kit_extract', { files: [id] });
    assert.equal(run.status, 'failed');
    assert.match(run.error ?? '', /huge\.png \(files\[0\]\) could not be decoded/);
    assert.equal(run.cost_sparks, 0);
    assert.equal((await teamState(s.database.db.pool, team.teamId)).balance, before);
    assert.deepEqual(await ledgerDrift(s.database.db.pool), []);
    assert.ok(worker.alive);
  });
});

describe('the server side', () => {
  test('the API logged no error, and answers', async () => {
    await waitFor('the API to answer', async () => ((await call(s, team.key, 'GET', '/v1/me')).statusCode === 200 ? true : undefined));
    const bad = s.logs.lines.filter((l) => (JSON.parse(l) as { level: number }).level >= 50);
    assert.deepEqual(bad, []);
  });
});
