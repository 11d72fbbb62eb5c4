// image_color_grade doing real work, its runner run directly: outputs decoded and measured (each
// slider, grain, the presets, formats and orientation kept), and a cancel between bands.
// (image_upscale is in tools-image-upscale.test.ts; both through the API and a real worker in
// tools-image-api.test.ts.)
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import { describe, test } from 'node:test';
import sharp from 'sharp';
import { imageColorGrade } from '../src/tools/catalog/image-color-grade.js';
import { redOverBlue, runDirect } from './helpers/image-tools.js';
import {
  colourful,
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

const grade = async (input: Raster, values: Record<string, unknown>, runId?: string) =>
  (await runDirect(imageColorGrade, await encode(input, 'png'), 'in.png', values, runId)).pixels;

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
