// image_upscale's learned method (issue 28): the network's outputs against a stored reference,
// tiling, the zero-correction model giving the Lanczos3 path exactly, every kind of input the
// Lanczos3 path takes, and `method: lanczos` giving what it gave before the network existed.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import sharp, { type Metadata } from 'sharp';
import { imageUpscale } from '../src/tools/catalog/image-upscale.js';
import { upscaleImage } from '../src/tools/image/upscale.js';
import { LumaNet, lumaPlane, type LumaOutput } from '../src/tools/upscaler/luma-net.js';
import { inputFile } from './helpers/images.js';
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

const shipped = new LumaNet({ threads: 2 });
const zero = new LumaNet({ modelPath: ZERO_MODEL, threads: 1 });
after(async () => {
  await shipped.close();
  await zero.close();
});

interface Result {
  bytes: Buffer;
  meta: Metadata;
  progress: number[];
}

async function run(
  bytes: Buffer,
  fileName: string,
  method: 'learned' | 'lanczos',
  net?: LumaNet,
  opts: { signal?: AbortSignal; onProgress?: (f: number) => void; outDir?: string } = {},
): Promise<Result> {
  const input = await inputFile(bytes, fileName);
  const outDir = opts.outDir ?? (await fs.mkdtemp(path.join(os.tmpdir(), 'toolrun-learned-')));
  const progress: number[] = [];
  try {
    const out = await upscaleImage({
      input: input.path,
      inputName: fileName,
      outDir,
      signal: opts.signal ?? new AbortController().signal,
      progress: (f) => {
        progress.push(f);
        opts.onProgress?.(f);
      },
      timeoutSeconds: 60,
      method,
      ...(net ? { net } : {}),
    });
    assert.deepEqual(await fs.readdir(outDir), [out.fileName], 'nothing else left in the work directory');
    const written = await fs.readFile(out.path);
    return { bytes: written, meta: await sharp(written).metadata(), progress };
  } finally {
    await fs.rm(input.dir, { recursive: true, force: true });
    if (!opts.outDir) await fs.rm(outDir, { recursive: true, force: true });
  }
}

/** Decoded samples at the stored depth (16-bit stays 16-bit). */
async function samples(bytes: Buffer): Promise<{ data: Uint8Array | Uint16Array; channels: number }> {
  const meta = await sharp(bytes).metadata();
  const sixteen = meta.depth === 'ushort';
  // keepIccProfile: the stored values, not a conversion to sRGB.
  const { data, info } = await sharp(bytes).keepIccProfile().raw(sixteen ? { depth: 'ushort' } : {}).toBuffer({ resolveWithObject: true });
  return { data: sixteen ? new Uint16Array(data.buffer, data.byteOffset, data.length / 2) : data, channels: info.channels };
}

describe('the network', () => {
  test('ONNX Runtime gives the stored PyTorch reference for a fixed input, at most 1 grey level apart', async () => {
    const ref = JSON.parse(await fs.readFile(REFERENCE, 'utf8')) as { width: number; height: number; luma255: number[]; luma2x255: number[] };
    const plane = lumaPlane(ref.width, ref.height);
    ref.luma255.forEach((v, i) => (plane[i] = v / 255));
    const got: number[] = [];
    await shipped.run(plane, ref.width, ref.height, 'luma2x', (_y0, rows) => {
      for (const v of rows) got.push(Math.round(Math.min(1, Math.max(0, v)) * 255));
    });
    assert.equal(got.length, ref.luma2x255.length);
    const worst = Math.max(...got.map((v, i) => Math.abs(v - ref.luma2x255[i]!)));
    assert.ok(worst <= 1, `worst difference ${worst} grey levels`);
    // Not a network that does nothing: the correction moves some pixels.
    const plain = new Float32Array(got.length);
    await zero.run(plane, ref.width, ref.height, 'luma2x', (y0, rows) => plain.set(rows, y0 * 2 * ref.width));
    const moved = got.filter((v, i) => Math.abs(v - Math.round(plain[i]! * 255)) >= 2).length;
    assert.ok(moved > got.length / 20, `${moved} of ${got.length} pixels moved by the correction`);
  });

  for (const output of ['correction', 'luma2x'] as LumaOutput[]) {
    test(`tiled and untiled ${output} are equal (tiles of 16, strips of 8 against one tile)`, async () => {
      const [w, h] = [70, 45];
      const plane = lumaPlane(w, h);
      for (let i = 0; i < w * h; i++) plane[i] = (Math.sin(i * 0.37) * 0.5 + 0.5) * ((i % w) / w);
      const collect = async (tile: number, stripRows: number) => {
        const out = new Float32Array(4 * w * h);
        let strips = 0;
        await shipped.run(plane, w, h, output, (y0, rows) => {
          out.set(rows, y0 * 2 * w);
          strips++;
        }, { tile, stripRows });
        return { out, strips };
      };
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

      const viaZero = await run(input.bytes, input.fileName, 'learned', zero);
      for (const key of ['format', 'width', 'height', 'channels', 'depth', 'space', 'hasAlpha'] as const) {
        assert.equal(viaZero.meta[key], lanczos.meta[key], key);
      }
      assert.ok(viaZero.meta.icc === undefined ? lanczos.meta.icc === undefined : lanczos.meta.icc?.equals(viaZero.meta.icc), 'the same profile');
      const a = await samples(lanczos.bytes);
      const z = await samples(viaZero.bytes);
      assert.deepEqual(z.data, a.data, 'the same samples');

      const learned = await run(input.bytes, input.fileName, 'learned', shipped);
      for (const key of ['format', 'width', 'height', 'channels', 'depth', 'space', 'hasAlpha'] as const) {
        assert.equal(learned.meta[key], lanczos.meta[key], key);
      }
      assert.ok(learned.progress.every((f, i) => f >= 0 && f <= 1 && (i === 0 || f >= learned.progress[i - 1]!)), learned.progress.join(' '));
      const l = await samples(learned.bytes);
      const colour = a.channels === 2 || a.channels === 4 ? a.channels - 1 : a.channels;
      const lossy = learned.meta.format === 'jpeg' || learned.meta.format === 'webp';
      let apart = 0;
      let moved = 0;
      for (let p = 0; p < a.data.length; p += a.channels) {
        const d0 = l.data[p]! - a.data[p]!;
        if (d0 !== 0) moved++;
        // Alpha is never touched.
        if (colour < a.channels) assert.equal(l.data[p + colour], a.data[p + colour], 'alpha');
        // The same change on every colour band (rounding and clipping apart).
        const top = a.data instanceof Uint16Array ? 65535 : 255;
        let clipped = false;
        for (let b = 0; b < colour; b++) for (const v of [l.data[p + b], a.data[p + b]]) if (v === 0 || v === top) clipped = true;
        if (!clipped) for (let b = 1; b < colour; b++) if (Math.abs(l.data[p + b]! - a.data[p + b]! - d0) > (a.data instanceof Uint16Array ? 257 : 1)) apart++;
      }
      const pixels = a.data.length / a.channels;
      if (pixels > 64) assert.ok(moved > 0, 'the correction changed something');
      // Lossy encoders re-quantise (and subsample) the colour; lossless outputs keep the equal change.
      if (!lossy) assert.ok(apart <= pixels * 0.01, `${apart} of ${pixels} pixels changed unequally across bands`);
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
