// image_upscale resamples like a textbook centred Lanczos3 at 2x and 4x (issues 17, 38): an impulse lands
// symmetrically on the output pixels that cover it, and on generated images with texture and
// edges the tool's output is within 0.1 dB of a reference computed here from the definition
// (test/helpers/lanczos-reference.ts), for RGB and for RGBA (alpha with the same geometry).
// libvips' own resize, which the tool used before, is printed beside it for comparison.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import { describe, test } from 'node:test';
import sharp from 'sharp';
import { imageUpscale } from '../src/tools/catalog/image-upscale.js';
import { decode, encode, runContext, type Raster } from './helpers/images.js';
import { centredLanczos3, psnr } from './helpers/lanczos-reference.js';

/** The tool's Lanczos3 method run directly on a PNG of the raster; its output decoded. */
async function upscale(r: Raster, scale: 2 | 4 = 2): Promise<Raster> {
  const { ctx, cleanup } = await runContext(imageUpscale, await encode(r, 'png'), 'in.png', { values: { method: 'lanczos', scale } });
  try {
    assert.ok(imageUpscale.run);
    const [out] = await imageUpscale.run(ctx);
    assert.ok(out);
    assert.deepEqual(await fs.readdir(ctx.workDir), [out.fileName], 'nothing else left in the work directory');
    return decode(await fs.readFile(out.path));
  } finally {
    await cleanup();
  }
}

/** A deterministic pseudo-random generator (the same picture on every run). */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/**
 * A picture with fine texture (noise, softened), smooth gradients, hard-edged shapes and thin
 * diagonal lines, `channels` 3 or 4 (alpha varying smoothly and with a hard step).
 */
async function textured(width: number, height: number, channels: 3 | 4, seed: number): Promise<Raster> {
  const rnd = lcg(seed);
  const noise = Buffer.alloc(width * height * 3);
  for (let i = 0; i < noise.length; i++) noise[i] = Math.floor(rnd() * 256);
  const soft = await sharp(noise, { raw: { width, height, channels: 3 } }).blur(0.8).raw().toBuffer();
  const data = Buffer.alloc(width * height * channels);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = y * width + x;
      const box = x > width * 0.3 && x < width * 0.6 && y > height * 0.25 && y < height * 0.7;
      const line = (x + 2 * y) % 23 === 0;
      for (let c = 0; c < 3; c++) {
        const gradient = (c === 0 ? x / width : c === 1 ? y / height : 1 - x / width) * 120;
        let v = 0.5 * soft[i * 3 + c]! + gradient;
        if (box) v = c === 0 ? 245 : 15;
        if (line) v = 0;
        data[i * channels + c] = Math.max(0, Math.min(255, Math.round(v)));
      }
      if (channels === 4) data[i * channels + 3] = x < width / 2 ? 255 : Math.round(80 + (120 * y) / height);
    }
  }
  return { data, width, height, channels };
}

function crop(r: Raster, x0: number, y0: number, w: number, h: number): Raster {
  const data = Buffer.alloc(w * h * r.channels);
  for (let y = 0; y < h; y++) r.data.copy(data, y * w * r.channels, ((y0 + y) * r.width + x0) * r.channels, ((y0 + y) * r.width + x0 + w) * r.channels);
  return { data, width: w, height: h, channels: r.channels };
}

function band(r: Raster, c: number): Raster {
  const data = Buffer.alloc(r.width * r.height);
  for (let i = 0; i < data.length; i++) data[i] = r.data[i * r.channels + c]!;
  return { data, width: r.width, height: r.height, channels: 1 };
}

describe('image_upscale resamples like a centred Lanczos3', () => {
  test('a one-pixel line lands symmetrically on the two output pixels that cover it', async () => {
    const width = 16;
    const height = 8;
    const data = Buffer.alloc(width * height * 3, 20);
    for (let y = 0; y < height; y++) data.fill(220, (y * width + 7) * 3, (y * width + 8) * 3);
    const out = await upscale({ data, width, height, channels: 3 });
    const row = Array.from({ length: 32 }, (_, x) => out.data[(8 * 32 + x) * 3]!);
    // Input pixel 7 covers output pixels 14 and 15: both peak alike, the profile mirrors about 14.5.
    assert.equal(row[14], row[15], row.join(' '));
    for (let d = 1; d <= 5; d++) assert.ok(Math.abs(row[14 - d]! - row[15 + d]!) <= 1, `mirror at ${d}: ${row.join(' ')}`);
    assert.ok(row[14]! > row[13]! && row[13]! > row[12]!, row.join(' '));
    // The reference's profile, to the rounding of the stored first pass.
    const ref = centredLanczos3({ data, width, height, channels: 3 }, 2);
    row.forEach((v, x) => assert.ok(Math.abs(v - ref.data[(8 * 32 + x) * 3]!) <= 1, `x ${x}: ${row.join(' ')}`));
  });

  test('4x: a one-pixel line lands symmetrically on the four output pixels that cover it, as the reference has it', async () => {
    const width = 16;
    const height = 8;
    const data = Buffer.alloc(width * height * 3, 20);
    for (let y = 0; y < height; y++) data.fill(220, (y * width + 7) * 3, (y * width + 8) * 3);
    const out = await upscale({ data, width, height, channels: 3 }, 4);
    assert.deepEqual([out.width, out.height], [64, 32]);
    const row = Array.from({ length: 64 }, (_, x) => out.data[(16 * 64 + x) * 3]!);
    // Input pixel 7 covers output pixels 28 ... 31: the profile mirrors about 29.5.
    for (let d = 0; d <= 10; d++) assert.ok(Math.abs(row[29 - d]! - row[30 + d]!) <= 1, `mirror at ${d}: ${row.join(' ')}`);
    assert.ok(row[29]! > row[27]! && row[27]! > row[26]!, row.join(' '));
    const ref = centredLanczos3({ data, width, height, channels: 3 }, 4);
    row.forEach((v, x) => assert.ok(Math.abs(v - ref.data[(16 * 64 + x) * 3]!) <= 1, `x ${x}: ${row.join(' ')} vs ${Array.from({ length: 64 }, (_, i) => ref.data[(16 * 64 + i) * 3]).join(' ')}`));
  });

  for (const [scale, channels] of [[2, 3], [2, 4], [4, 3], [4, 4]] as const) {
    test(`${scale}x, ${channels === 3 ? 'RGB' : 'RGBA'}: within 0.1 dB of the reference against the original, and close to the reference itself`, async (t) => {
      for (const seed of [1, 2]) {
        const truth = await textured(160, 120, channels, seed);
        // The original reduced with a cubic filter is the input; enlarged back, it is compared with the original.
        const small = await decode(await sharp(await encode(truth, 'png')).resize(160 / scale, 120 / scale, { kernel: 'cubic' }).png().toBuffer());
        assert.equal(small.channels, channels);
        const tool = await upscale(small, scale);
        const reference = centredLanczos3(small, scale);
        const libvips = await decode(await sharp(await encode(small, 'png')).resize(160, 120, { kernel: 'lanczos3' }).png().toBuffer());
        assert.deepEqual([tool.width, tool.height, tool.channels], [160, 120, channels]);
        const toolDb = psnr(tool, truth, 2 * scale);
        const refDb = psnr(reference, truth, 2 * scale);
        t.diagnostic(`seed ${seed}: tool ${toolDb.toFixed(2)} dB, reference ${refDb.toFixed(2)} dB, libvips resize ${psnr(libvips, truth, 2 * scale).toFixed(2)} dB`);
        if (channels === 3) {
          assert.ok(Math.abs(toolDb - refDb) <= 0.1, `tool ${toolDb} dB vs reference ${refDb} dB`);
          assert.ok(psnr(tool, reference) >= 45, `tool vs reference ${psnr(tool, reference)} dB`);
        } else {
          // Colour is filtered premultiplied by alpha (as libvips does): compared where the picture
          // is opaque; alpha itself everywhere.
          const opaque = (r: Raster) => crop(r, 0, 0, r.width / 2 - 8, r.height);
          const alpha = (r: Raster) => band(r, 3);
          assert.ok(Math.abs(psnr(opaque(tool), opaque(truth), 2 * scale) - psnr(opaque(reference), opaque(truth), 2 * scale)) <= 0.1, 'colour where opaque');
          assert.ok(Math.abs(psnr(alpha(tool), alpha(truth), 2 * scale) - psnr(alpha(reference), alpha(truth), 2 * scale)) <= 0.1, 'alpha');
        }
      }
    });
  }

  test('a CMYK JPEG comes out as sRGB at twice the size, its colours kept', async () => {
    const rgb = await textured(80, 60, 3, 3);
    const cmyk = await sharp(await encode(rgb, 'png')).toColourspace('cmyk').jpeg({ quality: 95 }).toBuffer();
    assert.equal((await sharp(cmyk).metadata()).space, 'cmyk');
    const { ctx, cleanup } = await runContext(imageUpscale, cmyk, 'print.jpg', { values: { method: 'lanczos' } });
    try {
      assert.ok(imageUpscale.run);
      const [out] = await imageUpscale.run(ctx);
      assert.ok(out);
      const meta = await sharp(out.path).metadata();
      assert.deepEqual([meta.format, meta.space, meta.channels, meta.width, meta.height], ['jpeg', 'srgb', 3, 160, 120]);
      // Against the CMYK input as sRGB, enlarged by the reference: the same picture (JPEG apart).
      const asRgb = await decode(await sharp(cmyk).toColourspace('srgb').png().toBuffer());
      const tool = await decode(await fs.readFile(out.path));
      assert.ok(psnr(tool, centredLanczos3(asRgb, 2), 4) > 30, `${psnr(tool, centredLanczos3(asRgb, 2), 4)} dB`);
    } finally {
      await cleanup();
    }
  });
});
