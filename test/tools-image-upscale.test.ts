// image_upscale doing real work, its runner run directly: outputs decoded and measured (size,
// format, alpha, EXIF orientation, colour profile, no added sharpening), its size limits, and a
// cancel. (image_color_grade is in tools-image-grade.test.ts; both through the API and a real
// worker in tools-image-api.test.ts.)
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import { describe, test } from 'node:test';
import sharp from 'sharp';
import { imageUpscale } from '../src/tools/catalog/image-upscale.js';
import { image } from '../src/tools/manifest.js';
import { runDirect, slot } from './helpers/image-tools.js';
import { colourful, decode, edgeEnergy, encode, jpegQuality, means, raster, runContext, type Raster } from './helpers/images.js';

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

    // No sharpening in the Lanczos3 method (issue 17): the edges are those of the resample, not
    // crisper than libvips' own Lanczos.
    const lanczos = await runDirect(imageUpscale, await encode(rgba, 'png'), 'a.png', { method: 'lanczos' });
    const plain = await decode(await sharp(await encode(rgba, 'png')).resize(128, 96, { kernel: 'lanczos3' }).png().toBuffer());
    const ratio = edgeEnergy(lanczos.pixels) / edgeEnergy(plain);
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
