import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import sharp, { type Metadata } from 'sharp';
import type { Loc } from '../src/core/errors.js';
import type { RunWorker } from '../src/runs/worker.js';
import { imageColorGrade } from '../src/tools/catalog/image-color-grade.js';
import { imageUpscale } from '../src/tools/catalog/image-upscale.js';
import { image, type ToolOutput } from '../src/tools/manifest.js';
import { createToolRegistry } from '../src/tools/registry.js';
import { makeTeam, type TeamFixture } from './helpers/fixtures.js';
import {
  colourful,
  decode,
  edgeEnergy,
  encode,
  flat,
  jpegQuality,
  localVariance,
  luma,
  maxAbsDiff,
  maxChannelSpread,
  means,
  meanSaturation,
  raster,
  runContext,
  stdDev,
  type Raster,
} from './helpers/images.js';
import { assertFieldErrors, call, estimate, runOf, start, uploadReady, type EstimateJson, type RunJson } from './helpers/runs.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { startTestWorker, waitFor } from './helpers/worker.js';

/** The two image tools doing real work: outputs decoded and measured. */

const slot = (name: string): Loc => ['body', 'inputs', name];

/** Runs a tool's runner directly on real files; returns its one output, decoded, and its metadata. */
async function runDirect(
  tool: typeof imageUpscale,
  bytes: Buffer,
  fileName: string,
  values: Record<string, unknown> = {},
  runId?: string,
): Promise<{ out: ToolOutput; meta: Metadata; pixels: Raster; bytes: Buffer; progress: number[] }> {
  const { ctx, progress, cleanup } = await runContext(tool, bytes, fileName, { values, ...(runId ? { runId } : {}) });
  try {
    assert.ok(tool.run);
    const outputs = await tool.run(ctx);
    assert.equal(outputs.length, 1);
    const out = outputs[0]!;
    assert.equal((await fs.readdir(ctx.workDir)).length, 1, 'one file in the work directory');
    const written = await fs.readFile(out.path);
    return { out, meta: await sharp(written).metadata(), pixels: await decode(written), bytes: written, progress };
  } finally {
    await cleanup();
  }
}

const grade = async (input: Raster, values: Record<string, unknown>, runId?: string) =>
  (await runDirect(imageColorGrade, await encode(input, 'png'), 'in.png', values, runId)).pixels;

const redOverBlue = (r: Raster) => {
  const [red, , blue] = means(r, undefined, true);
  return red / blue;
};

describe('image_upscale, run directly', () => {
  test('doubles each side exactly, keeps JPEG as JPEG, and the content is the input enlarged', async () => {
    const input = colourful(96, 64);
    const { out, meta, pixels, progress, bytes } = await runDirect(imageUpscale, await encode(input, 'jpeg'), 'photo.jpeg');
    assert.equal(meta.format, 'jpeg');
    assert.equal(jpegQuality(bytes), 90);
    assert.equal(out.mimeType, 'image/jpeg');
    assert.equal(out.fileName, 'photo-upscaled.jpg');
    assert.deepEqual([meta.width, meta.height], [192, 128]);
    // Scaled back down, the output matches the input (a sharpen and two JPEG passes apart).
    const back = await decode(await sharp(pixels.data, { raw: { width: 192, height: 128, channels: 3 } }).resize(96, 64, { kernel: 'cubic' }).png().toBuffer());
    const diff = means(back).map((m, c) => Math.abs(m - means(input)[c]!));
    assert.ok(Math.max(...diff) < 3, `channel means moved by ${diff.join(', ')}`);
    assert.ok(progress.length > 0 && progress.every((f) => f >= 0 && f <= 1));
  });

  test('PNG stays PNG (alpha kept) and WebP stays WebP', async () => {
    const rgb = colourful(64, 48);
    const rgba: Raster = { width: 64, height: 48, channels: 4, data: Buffer.alloc(64 * 48 * 4) };
    for (let p = 0; p < 64 * 48; p++) {
      rgb.data.copy(rgba.data, p * 4, p * 3, p * 3 + 3);
      rgba.data[p * 4 + 3] = p % 64 < 32 ? 255 : 64;
    }
    const png = await runDirect(imageUpscale, await encode(rgba, 'png'), 'a.png');
    assert.equal(png.meta.format, 'png');
    assert.equal(png.out.mimeType, 'image/png');
    assert.deepEqual([png.meta.width, png.meta.height, png.meta.channels], [128, 96, 4]);
    // Left half opaque, right half at alpha 64, away from the seam.
    assert.equal(png.pixels.data[(10 * 128 + 10) * 4 + 3], 255);
    assert.equal(png.pixels.data[(10 * 128 + 120) * 4 + 3], 64);

    // No sharpening (issue 17): the edges are those of the resample, not crisper than libvips' own Lanczos.
    const plain = await decode(await sharp(await encode(rgba, 'png')).resize(128, 96, { kernel: 'lanczos3' }).png().toBuffer());
    const ratio = edgeEnergy(png.pixels) / edgeEnergy(plain);
    assert.ok(ratio > 0.9 && ratio < 1.1, `edge energy x${ratio}`);

    const webp = await runDirect(imageUpscale, await encode(rgb, 'webp'), 'b.webp');
    assert.equal(webp.meta.format, 'webp');
    assert.equal(webp.out.mimeType, 'image/webp');
    assert.deepEqual([webp.meta.width, webp.meta.height], [128, 96]);
  });

  test('applies EXIF orientation 6: sides swapped, no orientation tag, content turned clockwise', async () => {
    // Stored 80 x 48: a red block in the stored top-left corner, blue elsewhere.
    const stored = raster(80, 48, (x, y) => (x < 20 && y < 12 ? [230, 20, 20] : [20, 40, 220]));
    const jpeg = await encode(stored, 'jpeg', (s) => s.withMetadata({ orientation: 6 }));
    assert.equal((await sharp(jpeg).metadata()).orientation, 6);
    const { meta, pixels } = await runDirect(imageUpscale, jpeg, 'turned.jpg');
    assert.deepEqual([meta.width, meta.height], [96, 160]);
    assert.equal(meta.orientation, undefined);
    // Displayed, the stored top-left is the top-right: the block covers x 72..95, y 0..39 at 2x.
    const at = (x: number, y: number) => means(pixels, { x, y, w: 4, h: 4 });
    const [r1, , b1] = at(84, 16);
    assert.ok(r1 > 180 && b1 < 80, `top-right is red: ${at(84, 16).join(', ')}`);
    for (const [x, y] of [[8, 16], [84, 140], [8, 140]] as const) {
      const [r, , b] = at(x, y);
      assert.ok(b > 180 && r < 80, `(${x}, ${y}) is blue: ${at(x, y).join(', ')}`);
    }
  });

  test('keeps a Display P3 profile and its pixel values (no conversion to sRGB)', async () => {
    const input = raster(64, 48, (x) => (x < 32 ? [20, 200, 60] : [210, 40, 160]));
    const p3 = await encode(input, 'png', (s) => s.withIccProfile('p3'));
    const inMeta = await sharp(p3).metadata();
    assert.ok(inMeta.icc && inMeta.icc.length > 0, 'the input carries a profile');
    const { meta, pixels } = await runDirect(imageUpscale, p3, 'wide.png');
    assert.ok(meta.icc, 'the output carries a profile');
    assert.ok(meta.icc.equals(inMeta.icc), 'the same profile');
    const stored = await decode(p3);
    const diff = means(pixels).map((m, c) => Math.abs(m - means(stored)[c]!));
    assert.ok(Math.max(...diff) < 2, `pixel values kept in the P3 encoding: moved by ${diff.join(', ')}`);
  });

  test('validate: at most 8192 px a side and 64 MP out, on ["body","inputs","image"]', () => {
    assert.ok(imageUpscale.validate);
    const check = (w: number, h: number) => imageUpscale.validate!({ values: {}, media: { image: [image(w, h)] }, durationHint: null });
    assert.deepEqual(check(4096, 3906), []); // 8192 x 7812 = 63.99 MP
    assert.deepEqual(check(4096, 1), []);
    const side = check(4097, 10);
    assert.equal(side.length, 1);
    assert.deepEqual(side[0]!.loc, slot('image'));
    assert.equal(side[0]!.code, 'too_large');
    assert.match(side[0]!.message, /8192 px a side/);
    assert.match(check(10, 4097)[0]!.message, /8192 px a side/);
    const mp = check(4096, 3907); // 8192 x 7814 = 64.01 MP
    assert.equal(mp[0]!.code, 'too_large');
    assert.match(mp[0]!.message, /64 megapixels/);
  });

  test('a cancel while libvips works rejects at once and leaves the work directory empty', async () => {
    const ac = new AbortController();
    let abortedAt = 0;
    const input = await encode(colourful(1200, 900), 'png');
    const { ctx, cleanup } = await runContext(imageUpscale, input, 'big.png', {
      signal: ac.signal,
      onProgress: (f) => {
        // Reported once the input is read, before the resample: stop the run now.
        if (f === 0.1) {
          abortedAt = Date.now();
          ac.abort('canceled');
        }
      },
    });
    try {
      await assert.rejects(imageUpscale.run!(ctx));
      assert.ok(abortedAt > 0);
      assert.ok(Date.now() - abortedAt < 250, `rejected ${Date.now() - abortedAt} ms after the abort`);
      assert.deepEqual(await fs.readdir(ctx.workDir), []);
    } finally {
      await cleanup();
    }
  });

  test('a stopped run rejects without writing anything', async () => {
    const ac = new AbortController();
    ac.abort('canceled');
    const { ctx, cleanup } = await runContext(imageUpscale, await encode(colourful(64, 48), 'png'), 'a.png', { signal: ac.signal });
    try {
      await assert.rejects(imageUpscale.run!(ctx));
      assert.deepEqual(await fs.readdir(ctx.workDir), []);
    } finally {
      await cleanup();
    }
  });
});

describe('image_color_grade, run directly', () => {
  const grey = flat(96, 96, [118, 118, 118]); // about 18 % in linear light

  test('defaults change nothing (the colour pipeline round-trips)', async () => {
    const input = colourful();
    const { pixels, meta, out } = await runDirect(imageColorGrade, await encode(input, 'png'), 'c.png');
    assert.equal(meta.format, 'png');
    assert.equal(out.fileName, 'c-graded.png');
    assert.ok(maxAbsDiff(pixels, input) <= 1, `max difference ${maxAbsDiff(pixels, input)}`);
  });

  test('temperature: warmer raises red over blue, cooler lowers it, brightness about the same', async () => {
    const input = colourful();
    const warm = await grade(input, { temperature: 60 });
    const cool = await grade(input, { temperature: -60 });
    assert.ok(redOverBlue(warm) > redOverBlue(input) * 1.25, `warm ${redOverBlue(warm)} vs ${redOverBlue(input)}`);
    assert.ok(redOverBlue(cool) < redOverBlue(input) / 1.25, `cool ${redOverBlue(cool)} vs ${redOverBlue(input)}`);
    const l = (r: Raster) => luma(r).reduce((a, b) => a + b, 0) / (r.width * r.height);
    assert.ok(Math.abs(l(warm) - l(input)) < 0.06 * l(input), `luma ${l(warm)} vs ${l(input)}`);
  });

  test('saturation -100 is grey; +50 is more saturated', async () => {
    const input = colourful();
    assert.ok(maxChannelSpread(input) > 100);
    assert.ok(maxChannelSpread(await grade(input, { saturation: -100 })) <= 1);
    const more = await grade(input, { saturation: 50 });
    assert.ok(meanSaturation(more) > meanSaturation(input) + 0.08, `${meanSaturation(more)} vs ${meanSaturation(input)}`);
  });

  test('exposure: +1 stop doubles the linear light of mid-grey, -1 halves it', async () => {
    const base = means(grey, undefined, true)[1];
    const up = means(await grade(grey, { exposure: 1 }), undefined, true)[1];
    const down = means(await grade(grey, { exposure: -1 }), undefined, true)[1];
    assert.ok(Math.abs(up / base - 2) < 0.06, `+1 stop: x${up / base}`);
    assert.ok(Math.abs(down / base - 0.5) < 0.03, `-1 stop: x${down / base}`);
  });

  test('contrast +50 spreads the tones, -50 narrows them', async () => {
    const ramp = raster(128, 32, (x) => [Math.round((x * 255) / 127), Math.round((x * 255) / 127), Math.round((x * 255) / 127)]);
    const sd = (r: Raster) => stdDev(luma(r));
    const more = sd(await grade(ramp, { contrast: 50 }));
    const less = sd(await grade(ramp, { contrast: -50 }));
    assert.ok(more > sd(ramp) * 1.08, `${more} vs ${sd(ramp)}`);
    assert.ok(less < sd(ramp) * 0.92, `${less} vs ${sd(ramp)}`);
  });

  test('grain raises local variance on a flat image, keeps its mean, and is reproducible per run id', async () => {
    assert.equal(localVariance(grey), 0);
    const a = await runDirect(imageColorGrade, await encode(grey, 'png'), 'g.png', { grain: 60 }, '00000000-0000-4000-8000-000000000001');
    assert.ok(localVariance(a.pixels) > 40, `local variance ${localVariance(a.pixels)}`);
    assert.ok(Math.abs(means(a.pixels)[1] - 118) < 2);
    const again = await runDirect(imageColorGrade, await encode(grey, 'png'), 'g.png', { grain: 60 }, '00000000-0000-4000-8000-000000000001');
    assert.ok(again.pixels.data.equals(a.pixels.data), 'same run id, same grain');
    const other = await runDirect(imageColorGrade, await encode(grey, 'png'), 'g.png', { grain: 60 }, '00000000-0000-4000-8000-000000000002');
    assert.ok(!other.pixels.data.equals(a.pixels.data), 'another run id, other grain');
  });

  test('bw_16mm: monochrome, a soft vignette and grain', async () => {
    assert.ok(maxChannelSpread(await grade(colourful(), { preset: 'bw_16mm' })) <= 1);
    const out = await grade(grey, { preset: 'bw_16mm' });
    assert.ok(maxChannelSpread(out) <= 1);
    const corner = (r: Raster) =>
      [means(r, { x: 0, y: 0, w: 12, h: 12 }), means(r, { x: 84, y: 84, w: 12, h: 12 })].reduce((s, m) => s + m[1], 0) / 2;
    const centre = (r: Raster) => means(r, { x: 36, y: 36, w: 24, h: 24 })[1];
    assert.equal(corner(grey) / centre(grey), 1);
    assert.ok(corner(out) / centre(out) < 0.85, `corner/centre ${corner(out) / centre(out)}`);
    assert.ok(localVariance(out) > 10, `local variance ${localVariance(out)}`);
  });

  test('presets: warm_film warms, cool_matte cools and lifts black, natural adds a little saturation', async () => {
    const input = colourful();
    assert.ok(redOverBlue(await grade(input, { preset: 'warm_film' })) > redOverBlue(input) * 1.1);
    assert.ok(redOverBlue(await grade(input, { preset: 'cool_matte' })) < redOverBlue(input) / 1.1);
    const black = await grade(flat(64, 64, [0, 0, 0]), { preset: 'cool_matte' });
    assert.ok(Math.min(...black.data) >= 15, `black lifted to ${Math.min(...black.data)}`);
    const natural = await grade(input, { preset: 'natural' });
    assert.ok(meanSaturation(natural) > meanSaturation(input) + 0.02);
    assert.ok(meanSaturation(natural) < meanSaturation(input) + 0.15);
    // Sliders apply on top of a preset.
    const warmer = await grade(input, { preset: 'cool_matte', temperature: 80 });
    assert.ok(redOverBlue(warmer) > redOverBlue(await grade(input, { preset: 'cool_matte' })) * 1.25);
  });

  test('same size and format out: JPEG, WebP, 16-bit PNG, and orientation applied', async () => {
    const input = colourful(100, 60);
    const jpeg = await runDirect(imageColorGrade, await encode(input, 'jpeg'), 'a.jpg', { preset: 'warm_film' });
    assert.deepEqual([jpeg.meta.format, jpeg.meta.width, jpeg.meta.height, jpeg.out.mimeType], ['jpeg', 100, 60, 'image/jpeg']);
    assert.equal(jpegQuality(jpeg.bytes), 90);
    const webp = await runDirect(imageColorGrade, await encode(input, 'webp'), 'a.webp', { contrast: 20 });
    assert.deepEqual([webp.meta.format, webp.meta.width, webp.meta.height, webp.out.mimeType], ['webp', 100, 60, 'image/webp']);
    const deep = await sharp(input.data, { raw: { width: 100, height: 60, channels: 3 } }).toColourspace('rgb16').png().toBuffer();
    const png16 = await runDirect(imageColorGrade, deep, 'deep.png', { preset: 'natural' });
    assert.deepEqual([png16.meta.format, png16.meta.depth, png16.meta.width, png16.meta.height], ['png', 'ushort', 100, 60]);
    const turned = await runDirect(imageColorGrade, await encode(input, 'jpeg', (s) => s.withMetadata({ orientation: 6 })), 't.jpg', { exposure: 0.5 });
    assert.deepEqual([turned.meta.width, turned.meta.height, turned.meta.orientation], [60, 100, undefined]);
  });

  test('a cancel mid-way stops between bands at once', async () => {
    const ac = new AbortController();
    let abortedAt = 0;
    const big = await encode(colourful(1200, 900), 'png');
    const { ctx, progress, cleanup } = await runContext(imageColorGrade, big, 'big.png', {
      values: { preset: 'bw_16mm' },
      signal: ac.signal,
      onProgress: (f) => {
        // The first band is done (progress past decoding): stop the run now.
        if (f > 0.15 && !ac.signal.aborted) {
          abortedAt = Date.now();
          ac.abort('canceled');
        }
      },
    });
    try {
      await assert.rejects(imageColorGrade.run!(ctx));
      const latency = Date.now() - abortedAt;
      assert.ok(abortedAt > 0, 'the run got as far as a band');
      assert.ok(latency < 250, `rejected ${latency} ms after the abort`);
      // 1200 x 900 is five bands; only the first was graded.
      assert.equal(progress.filter((f) => f > 0.15).length, 1, `progress ${progress.join(', ')}`);
      assert.deepEqual(await fs.readdir(ctx.workDir), []);
    } finally {
      await cleanup();
    }
  });
});

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
    const run = await waitFor(`${tool} run`, async () => {
      const r = (await call(s, team.key, 'GET', `/v1/runs/${started.id}`)).json<Run>();
      return ['succeeded', 'failed', 'canceled'].includes(r.status) ? r : undefined;
    }, 60_000);
    assert.equal(run.status, 'succeeded', run.error ?? '');
    assert.equal(run.cost_sparks, sparks);
    assert.equal(run.outputs.length, 1);
    const url = await waitFor('output check', async () => {
      const r = await call(s, team.key, 'GET', `/v1/runs/${run.id}/outputs/${run.outputs[0]!.asset_id}/url`);
      if (r.statusCode === 409) return undefined;
      assert.equal(r.statusCode, 200, r.body);
      return r.json<{ url: string }>().url;
    });
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
