// image_upscale's learned method (issue 28): the network's outputs against a stored reference,
// tiling, the zero-correction model giving the Lanczos3 path exactly, every kind of input the
// Lanczos3 path takes, and `method: lanczos` giving what it gave before the network existed.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import sharp from 'sharp';
import { imageUpscale } from '../src/tools/catalog/image-upscale.js';
import { defaultModelPath, LumaNet, lumaPlane, type LumaOutput } from '../src/tools/upscaler/luma-net.js';
import { assertCloseToTrained, assertMatchesReference, assertWeightsNeverSaturate, runWhole } from './helpers/luma-nets.js';
import { assertLumaOnlyChange, assertSameImage, upscaleRun as run } from './helpers/upscale-run.js';
import { upscaleInputs } from './helpers/upscale-inputs.js';

const ZERO_MODEL = path.join(import.meta.dirname, 'fixtures/upscaler/zero-correction.onnx');
const REFERENCE = path.join(import.meta.dirname, 'fixtures/upscaler/reference.json');

// The Lanczos3 outputs of upscaleInputs() as the code before issue 28 wrote them (SHA-256).
const LANCZOS_BEFORE: Record<string, string> = {
  'odd RGB PNG': '1873c950cac04cab8ddca7295aa0cd535aa9a9c30f6bc127af3d182ed9ec8e9b',
  'one pixel': '0510aae36ead9640680f530f7e4de950d07c18dea04c71add35b3c5a7d1218a0',
  JPEG: '6cd6a26e5d5fa0ef7b2f2b1a59b5e419980329a0dd0a57a0cde2e01885c9a87a',
  'RGBA PNG': 'ef31870a86364414a7697cfc186af1bc987c4017be2f54011cd2433be9d20e59',
  'grey PNG': '39fee452ff91bc0e99776768215039a86939d6dc7624cef9fe3e58739e1cbe3c',
  'grey 16-bit PNG': '06abcd868bd32adde7eabbf5ef7ef7073ea9079150abf260561b87782afe9182',
  'RGB 16-bit PNG': 'ad5948a84251862c32a191ca2b8351a836c3679c39b3e68aeac343ddaa0bdf77',
  'CMYK JPEG': '571a64134cfadbda99c2535e4aeebdeda6c40acb74663c722b421bb78419f06a',
  'EXIF-rotated JPEG': 'edb18a3e2cf4bb3ec8851856ff87582f74875d57ea3bfb2dc1c8e217aba1ada5',
  'Display P3 PNG': '94300ce0abfc18caada90481febb21d30f22864fa2c64d4a75fdc25e7a3257fd',
  WebP: '617f625347f4d1859ef7ce3e6ae30b49a4f928ead1027632c771c2b96c098279',
};

// What the service runs (the int8 model), and the trained network it was quantised from.
const shipped = new LumaNet({ threads: 2 });
const trained = new LumaNet({ modelPath: defaultModelPath(2, 'fp32'), threads: 2 });
const zero = new LumaNet({ modelPath: ZERO_MODEL, threads: 1 });
after(async () => {
  await Promise.all([shipped.close(), trained.close(), zero.close()]);
});

describe('the network', () => {
  test('the service runs the int8 model by default', () => {
    assert.equal(shipped.modelPath, defaultModelPath(2, 'int8'));
    assert.match(shipped.modelPath, /upscaler-x2-int8\.onnx$/);
  });

  test('the int8 model\'s weights stay within 7 bits, so that CPUs without VNNI compute the same network', async () => {
    await assertWeightsNeverSaturate(shipped.modelPath, 7);
  });

  test('the int8 model stays within 6 grey levels of the trained network on a photograph (RMS under 0.5)', async () => {
    await assertCloseToTrained(shipped, trained, { worstLevels: 6, rmsLevels: 0.5 });
  });

  test('ONNX Runtime gives the stored PyTorch reference for a fixed input, at most 1 grey level apart', async () => {
    await assertMatchesReference(trained, zero, REFERENCE);
  });

  for (const output of ['correction', 'luma2x'] as LumaOutput[]) {
    test(`tiled and untiled ${output} are equal (tiles of 16, strips of 8 against one tile)`, async () => {
      const [w, h] = [70, 45];
      const plane = lumaPlane(w, h);
      for (let i = 0; i < w * h; i++) plane[i] = (Math.sin(i * 0.37) * 0.5 + 0.5) * ((i % w) / w);
      const collect = (tile: number, stripRows: number) => runWhole(shipped, { plane, width: w, height: h }, output, { tile, stripRows });
      const tiled = await collect(16, 8);
      const whole = await collect(1000, 1000);
      assert.equal(tiled.strips, 6);
      assert.equal(whole.strips, 1);
      let worst = 0;
      for (let i = 0; i < whole.out.length; i++) worst = Math.max(worst, Math.abs(tiled.out[i]! - whole.out[i]!));
      assert.ok(worst < 1e-4, `worst difference ${worst}`);
      assert.ok(whole.out.some((v) => Math.abs(v) > 1e-3), 'the output is not all zero');
    });
  }

  test('stops between strips once the signal is aborted', async () => {
    const plane = lumaPlane(64, 64);
    const ac = new AbortController();
    let strips = 0;
    await assert.rejects(
      shipped.run(plane, 64, 64, 'correction', () => {
        strips++;
        ac.abort();
      }, { signal: ac.signal, stripRows: 8 }),
      (err: Error) => err.name === 'AbortError',
    );
    assert.equal(strips, 1);
  });
});

describe('image_upscale: learned and lanczos methods on every kind of input', async () => {
  const inputs = await upscaleInputs();

  test('the tool offers method learned (default) and lanczos', () => {
    const slot = imageUpscale.inputs.find((s) => s.name === 'method');
    assert.deepEqual([slot?.kind, slot?.choices, slot?.default, slot?.required], ['enum', ['learned', 'lanczos'], 'learned', false]);
  });

  for (const input of inputs) {
    test(`${input.name}: lanczos as before byte for byte; a zero correction gives the same pixels; the shipped model changes luma only`, async () => {
      const lanczos = await run(input.bytes, input.fileName, 'lanczos');
      assert.equal(createHash('sha256').update(lanczos.bytes).digest('hex'), LANCZOS_BEFORE[input.name]);

      await assertSameImage(lanczos, await run(input.bytes, input.fileName, 'learned', zero));

      const learned = await run(input.bytes, input.fileName, 'learned', shipped);
      await assertLumaOnlyChange(lanczos, learned);
    });
  }

  test('a cancel during the network rejects and leaves nothing behind', async () => {
    const big = await sharp({ create: { width: 900, height: 900, channels: 3, background: { r: 90, g: 120, b: 30 } } }).png().toBuffer();
    const ac = new AbortController();
    const outDir = await fs.mkdtemp(path.join(os.tmpdir(), 'toolrun-learned-'));
    const seen: number[] = [];
    try {
      // Aborted once the network's first strip has come back (progress past the Lanczos3 passes).
      await assert.rejects(
        run(big, 'big.png', 'learned', shipped, { signal: ac.signal, outDir, onProgress: (f) => (seen.push(f), f > 0.5 && ac.abort()) }),
        (err: Error) => /cancel|abort|stop/i.test(`${err.name} ${err.message}`),
      );
      assert.ok(seen.some((f) => f > 0.5) && !seen.some((f) => f >= 0.8), seen.join(' '));
      assert.deepEqual(await fs.readdir(outDir), []);
    } finally {
      await fs.rm(outDir, { recursive: true, force: true });
    }
  });
});
