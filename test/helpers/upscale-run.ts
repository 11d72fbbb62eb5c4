// image_upscale run directly (upscaleImage) on bytes, and the checks the learned method's tests
// share at every scale: a zero correction gives the Lanczos3 image itself; a real one moves luma
// only (the same change on every colour band, alpha untouched).
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp, { type Metadata } from 'sharp';
import { upscaleImage } from '../../src/tools/image/upscale.js';
import type { UpscaleScale } from '../../src/tools/image/upscale-rules.js';
import type { LumaNet } from '../../src/tools/upscaler/luma-net.js';
import { inputFile } from './images.js';

export interface UpscaleResult {
  bytes: Buffer;
  meta: Metadata;
  progress: number[];
}

export async function upscaleRun(
  bytes: Buffer,
  fileName: string,
  method: 'learned' | 'lanczos',
  net?: LumaNet,
  opts: { signal?: AbortSignal; onProgress?: (f: number) => void; outDir?: string; scale?: UpscaleScale } = {},
): Promise<UpscaleResult> {
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
      ...(opts.scale ? { scale: opts.scale } : {}),
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
export async function upscaleSamples(bytes: Buffer): Promise<{ data: Uint8Array | Uint16Array; channels: number }> {
  const meta = await sharp(bytes).metadata();
  const sixteen = meta.depth === 'ushort';
  // keepIccProfile: the stored values, not a conversion to sRGB.
  const { data, info } = await sharp(bytes).keepIccProfile().raw(sixteen ? { depth: 'ushort' } : {}).toBuffer({ resolveWithObject: true });
  return { data: sixteen ? new Uint16Array(data.buffer, data.byteOffset, data.length / 2) : data, channels: info.channels };
}

const KEPT = ['format', 'width', 'height', 'channels', 'depth', 'space', 'hasAlpha'] as const;

/** The same format, size, profile and samples. */
export async function assertSameImage(expected: UpscaleResult, got: UpscaleResult): Promise<void> {
  for (const key of KEPT) assert.equal(got.meta[key], expected.meta[key], key);
  assert.ok(got.meta.icc === undefined ? expected.meta.icc === undefined : expected.meta.icc?.equals(got.meta.icc), 'the same profile');
  assert.deepEqual((await upscaleSamples(got.bytes)).data, (await upscaleSamples(expected.bytes)).data, 'the same samples');
}

/** `learned` is `lanczos` with luma moved: the same file shape, alpha untouched, every colour band moved alike. */
export async function assertLumaOnlyChange(lanczos: UpscaleResult, learned: UpscaleResult): Promise<void> {
  for (const key of KEPT) assert.equal(learned.meta[key], lanczos.meta[key], key);
  assert.ok(learned.progress.every((f, i) => f >= 0 && f <= 1 && (i === 0 || f >= learned.progress[i - 1]!)), learned.progress.join(' '));
  const a = await upscaleSamples(lanczos.bytes);
  const l = await upscaleSamples(learned.bytes);
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
}
