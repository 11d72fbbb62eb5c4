// The two image tools doing real work through the API and a real worker: estimate, start, the
// cost, the output downloaded and measured, and each slot's bounds refused on their slot at
// estimate and start alike. (Their runners run directly are in tools-image-upscale.test.ts and
// tools-image-grade.test.ts.)
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import type { RunWorker } from '../src/runs/worker.js';
import { createToolRegistry } from '../src/tools/registry.js';
import { makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { redOverBlue, slot } from './helpers/image-tools.js';
import { colourful, decode, encode } from './helpers/images.js';
import { assertFieldErrors, estimate, finalRun, readyOutputUrl, runOf, start, uploadReady, type EstimateJson, type RunJson } from './helpers/runs.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { startTestWorker } from './helpers/worker.js';

describe('through the API and a real worker', () => {
  let s: TestServer;
  let worker: RunWorker;
  let team: TeamFixture;
  const tools = createToolRegistry();

  before(async () => {
    s = await startTestServer({ tools, env: { TOOLRUN_WORKER_POLL_MS: '200' } });
    worker = await startTestWorker(s, tools);
    team = await makeTeam(s.database.db, { plan: 'pro', sparks: 1000, rate: 300 });
  });
  after(async () => {
    await worker.stop(1000);
    await s.close();
  });

  type Run = Omit<RunJson, 'outputs'> & { outputs: (RunJson['outputs'][number] & { width: number | null; height: number | null })[] };

  /** Estimates, starts, waits for success; returns the run and its one output, downloaded. */
  async function runThrough(tool: string, inputs: Record<string, unknown>): Promise<{ run: Run; bytes: Buffer }> {
    const est = await estimate(s, team.key, tool, { inputs });
    assert.equal(est.statusCode, 200, est.body);
    const sparks = est.json<EstimateJson>().sparks;
    const started = runOf(await start(s, team.key, tool, { inputs }));
    const run = (await finalRun(s, team.key, started.id)) as Run;
    assert.equal(run.status, 'succeeded', run.error ?? '');
    assert.equal(run.cost_sparks, sparks);
    assert.equal(run.outputs.length, 1);
    const url = await readyOutputUrl(s, team.key, run.id, run.outputs[0]!.asset_id);
    const dl = await fetch(url);
    assert.equal(dl.status, 200);
    return { run, bytes: Buffer.from(await dl.arrayBuffer()) };
  }

  test('image_upscale: JPEG in, JPEG at 2x out; cost equals the estimate', async () => {
    const id = await uploadReady(s, team.key, await encode(colourful(120, 80), 'jpeg'), 'in.jpg', 'image/jpeg');
    const { run, bytes } = await runThrough('image_upscale', { image: [id] });
    const out = run.outputs[0]!;
    assert.deepEqual([out.width, out.height, out.mime_type, out.file_name], [240, 160, 'image/jpeg', 'in-upscaled.jpg']);
    const meta = await sharp(bytes).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ['jpeg', 240, 160]);
  });

  test('image_color_grade: warm_film on a PNG; same size, PNG, warmer', async () => {
    const input = colourful();
    const id = await uploadReady(s, team.key, await encode(input, 'png'), 'in.png', 'image/png');
    const { run, bytes } = await runThrough('image_color_grade', { image: [id], preset: 'warm_film', contrast: 10 });
    const out = run.outputs[0]!;
    assert.deepEqual([out.width, out.height, out.mime_type], [128, 96, 'image/png']);
    const pixels = await decode(bytes);
    assert.equal((await sharp(bytes).metadata()).format, 'png');
    assert.ok(redOverBlue(pixels) > redOverBlue(input) * 1.1);
  });

  test('image_upscale refuses inputs whose 2x output passes 8192 px a side or 64 MP (estimate and start)', async () => {
    const wide = await sharp({ create: { width: 4097, height: 8, channels: 3, background: '#808080' } }).png().toBuffer();
    const big = await sharp({ create: { width: 4096, height: 3907, channels: 3, background: '#808080' } }).png().toBuffer();
    for (const [bytes, limit] of [[wide, /8192 px a side/], [big, /64 megapixels/]] as const) {
      const id = await uploadReady(s, team.key, bytes, 'big.png', 'image/png');
      for (const res of [await estimate(s, team.key, 'image_upscale', { inputs: { image: [id] } }), await start(s, team.key, 'image_upscale', { inputs: { image: [id] } })]) {
        assertFieldErrors(res, [{ loc: slot('image'), code: 'too_large' }]);
        assert.match(res.json<{ error: { errors: { message: string }[] } }>().error.errors[0]!.message, limit);
      }
    }
  });

  test('image_color_grade: every slot bound is a 422 on its slot; the bounds themselves are accepted', async () => {
    const id = await uploadReady(s, team.key, await encode(colourful(32, 32), 'png'), 's.png', 'image/png');
    const bad: [string, unknown, string][] = [
      ['temperature', 101, 'out_of_range'],
      ['temperature', -101, 'out_of_range'],
      ['contrast', 100.5, 'out_of_range'],
      ['contrast', -101, 'out_of_range'],
      ['saturation', 101, 'out_of_range'],
      ['saturation', -100.01, 'out_of_range'],
      ['exposure', -3.1, 'out_of_range'],
      ['exposure', 3.1, 'out_of_range'],
      ['grain', -1, 'out_of_range'],
      ['grain', 101, 'out_of_range'],
      ['temperature', 'warm', 'wrong_type'],
      ['preset', 'sepia', 'invalid_choice'],
    ];
    for (const [name, value, code] of bad) {
      const body = { inputs: { image: [id], [name]: value } };
      assertFieldErrors(await estimate(s, team.key, 'image_color_grade', body), [{ loc: slot(name), code }]);
      assertFieldErrors(await start(s, team.key, 'image_color_grade', body), [{ loc: slot(name), code }]);
    }
    const edges = { temperature: -100, contrast: 100, saturation: -100, exposure: -3, grain: 100, preset: 'bw_16mm' };
    const ok = await estimate(s, team.key, 'image_color_grade', { inputs: { image: [id], ...edges } });
    assert.equal(ok.statusCode, 200, ok.body);
    const ok2 = await estimate(s, team.key, 'image_color_grade', { inputs: { image: [id], exposure: 3, grain: 0, temperature: 100 } });
    assert.equal(ok2.statusCode, 200, ok2.body);
  });
});
