import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp, { type Sharp } from 'sharp';
import { testLogger } from './test-logs.js';
import { resolveMediaBinaries } from '../../src/media/binaries.js';
import { image, type RunContext, type ToolManifest } from '../../src/tools/manifest.js';

/** Generated images, pixel statistics measured on decoded outputs, and a real RunContext. */

export type Rgb = [number, number, number];

/** Raw 8-bit RGB(A) pixels and their shape. */
export interface Raster {
  data: Buffer;
  width: number;
  height: number;
  channels: number;
}

/** An RGB raster from a function of the pixel position. */
export function raster(width: number, height: number, fn: (x: number, y: number) => Rgb): Raster {
  const data = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const [r, g, b] = fn(x, y);
      const i = (y * width + x) * 3;
      data[i] = r;
      data[i + 1] = g;
      data[i + 2] = b;
    }
  }
  return { data, width, height, channels: 3 };
}

/** Hues across, brightness down, saturation 0.7: a little of every colour and tone. */
export function colourful(width = 128, height = 96): Raster {
  // HSV with a fixed saturation is linear in V: per column, each channel is V x a factor.
  const s = 0.7;
  const factors = new Float64Array(width * 3);
  for (let x = 0; x < width; x++) {
    const h = x / width;
    [5, 3, 1].forEach((n, c) => {
      const k = (n + h * 6) % 6;
      factors[x * 3 + c] = 1 - s * Math.max(0, Math.min(k, 4 - k, 1));
    });
  }
  const data = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    const v = 255 * (0.15 + (0.8 * y) / (height - 1));
    for (let i = 0; i < width * 3; i++) data[y * width * 3 + i] = Math.round(v * factors[i]!);
  }
  return { data, width, height, channels: 3 };
}

/** One colour everywhere. */
export function flat(width: number, height: number, rgb: Rgb): Raster {
  return raster(width, height, () => rgb);
}

/** Encodes a raster (an optional sharp step before the format, e.g. withIccProfile). */
export async function encode(r: Raster, format: 'png' | 'jpeg' | 'webp', extra: (s: Sharp) => Sharp = (s) => s): Promise<Buffer> {
  const s = extra(sharp(r.data, { raw: { width: r.width, height: r.height, channels: r.channels === 4 ? 4 : 3 } }));
  if (format === 'jpeg') return s.jpeg({ quality: 95 }).toBuffer();
  if (format === 'webp') return s.webp({ lossless: true }).toBuffer();
  return s.png().toBuffer();
}

/** Decodes an image's stored 8-bit samples (no orientation applied, no colour conversion). */
export async function decode(input: string | Buffer): Promise<Raster> {
  const { data, info } = await sharp(input).keepIccProfile().raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height, channels: info.channels };
}

export function srgbToLinear(v8: number): number {
  const v = v8 / 255;
  return v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
}

/** Mean of each colour channel over a region (all of it by default), in 0..255 display values. */
export function means(r: Raster, region = { x: 0, y: 0, w: r.width, h: r.height }, linear = false): Rgb {
  const sum = [0, 0, 0];
  for (let y = region.y; y < region.y + region.h; y++) {
    for (let x = region.x; x < region.x + region.w; x++) {
      const i = (y * r.width + x) * r.channels;
      for (let c = 0; c < 3; c++) sum[c]! += linear ? srgbToLinear(r.data[i + c]!) : r.data[i + c]!;
    }
  }
  const n = region.w * region.h;
  return [sum[0]! / n, sum[1]! / n, sum[2]! / n];
}

/** Rec. 709 luma of each pixel (display values). */
export function luma(r: Raster): Float64Array {
  const out = new Float64Array(r.width * r.height);
  for (let p = 0; p < out.length; p++) {
    const i = p * r.channels;
    out[p] = 0.2126 * r.data[i]! + 0.7152 * r.data[i + 1]! + 0.0722 * r.data[i + 2]!;
  }
  return out;
}

export function stdDev(values: Float64Array): number {
  let m = 0;
  for (const v of values) m += v;
  m /= values.length;
  let s = 0;
  for (const v of values) s += (v - m) * (v - m);
  return Math.sqrt(s / values.length);
}

/** Mean HSV saturation ((max - min) / max) over the pixels, 0..1. */
export function meanSaturation(r: Raster): number {
  let s = 0;
  for (let p = 0; p < r.width * r.height; p++) {
    const i = p * r.channels;
    const px = [r.data[i]!, r.data[i + 1]!, r.data[i + 2]!];
    const max = Math.max(...px);
    s += max === 0 ? 0 : (max - Math.min(...px)) / max;
  }
  return s / (r.width * r.height);
}

/** The largest difference between two channels of one pixel, over the image. */
export function maxChannelSpread(r: Raster): number {
  let worst = 0;
  for (let p = 0; p < r.width * r.height; p++) {
    const i = p * r.channels;
    const a = r.data[i]!;
    const b = r.data[i + 1]!;
    const c = r.data[i + 2]!;
    worst = Math.max(worst, Math.max(a, b, c) - Math.min(a, b, c));
  }
  return worst;
}

/** Mean variance of luma inside 4x4 blocks: grain raises it, smooth content keeps it near 0. */
export function localVariance(r: Raster): number {
  const l = luma(r);
  let total = 0;
  let blocks = 0;
  for (let by = 0; by + 4 <= r.height; by += 4) {
    for (let bx = 0; bx + 4 <= r.width; bx += 4) {
      let m = 0;
      for (let y = 0; y < 4; y++) for (let x = 0; x < 4; x++) m += l[(by + y) * r.width + bx + x]!;
      m /= 16;
      let v = 0;
      for (let y = 0; y < 4; y++) for (let x = 0; x < 4; x++) v += (l[(by + y) * r.width + bx + x]! - m) ** 2;
      total += v / 16;
      blocks++;
    }
  }
  return total / blocks;
}

/** Largest absolute difference between two rasters of the same shape. */
export function maxAbsDiff(a: Raster, b: Raster): number {
  let worst = 0;
  for (let i = 0; i < a.data.length; i++) worst = Math.max(worst, Math.abs(a.data[i]! - b.data[i]!));
  return worst;
}

/** A tool's slot defaults under the given values, as the engine stores them on a run. */
export function withDefaults(tool: ToolManifest, values: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const slot of tool.inputs) if (slot.default !== undefined) out[slot.name] = slot.default;
  return { ...out, ...values };
}

/** A temporary directory with an input file written into it. */
export async function inputFile(bytes: Buffer, name: string): Promise<{ dir: string; path: string }> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'toolrun-img-'));
  const file = path.join(dir, name);
  await fs.writeFile(file, bytes);
  return { dir, path: file };
}

/**
 * A RunContext like the executor's: a real input file, a fresh work directory, a real signal.
 * `progress` records every fraction reported.
 */
export async function runContext(
  tool: ToolManifest,
  bytes: Buffer,
  fileName: string,
  opts: { values?: Record<string, unknown>; signal?: AbortSignal; runId?: string; onProgress?: (f: number) => void } = {},
): Promise<{ ctx: RunContext; progress: number[]; cleanup(): Promise<void> }> {
  const input = await inputFile(bytes, fileName);
  const workDir = await fs.mkdtemp(path.join(os.tmpdir(), 'toolrun-work-'));
  const meta = await sharp(bytes).metadata();
  const progress: number[] = [];
  const ctx: RunContext = {
    runId: opts.runId ?? randomUUID(),
    teamId: randomUUID(),
    values: withDefaults(tool, opts.values ?? {}),
    files: {
      image: [{ fileId: randomUUID(), path: input.path, fileName, mime: `image/${meta.format}`, info: image(meta.autoOrient.width, meta.autoOrient.height) }],
    },
    workDir,
    signal: opts.signal ?? new AbortController().signal,
    progress: (f) => {
      progress.push(f);
      opts.onProgress?.(f);
    },
    media: resolveMediaBinaries(),
    logger: testLogger('silent'),
    outbound: { allowPrivate: false },
    limits: { ffmpegThreads: 2, maxOutputBytes: 4 * 1024 ** 3 },
  };
  return {
    ctx,
    progress,
    cleanup: async () => {
      await fs.rm(input.dir, { recursive: true, force: true });
      await fs.rm(workDir, { recursive: true, force: true });
    },
  };
}

/** Mean absolute difference of luma between horizontal neighbours: edges and sharpening raise it. */
export function edgeEnergy(r: Raster): number {
  const l = luma(r);
  let s = 0;
  for (let y = 0; y < r.height; y++) for (let x = 0; x + 1 < r.width; x++) s += Math.abs(l[y * r.width + x + 1]! - l[y * r.width + x]!);
  return s / (r.height * (r.width - 1));
}

/** The IJG luminance quantisation table (natural order), which quality scales. */
const IJG_LUMA = [
  16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56, 14, 17, 22, 29, 51, 87, 80, 62, 18, 22, 37, 56, 68, 109,
  103, 77, 24, 35, 55, 64, 81, 104, 113, 92, 49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99,
];

/**
 * The quality a JPEG was written at, read back from its first quantisation table: the quality
 * whose scaled IJG table has exactly the same 64 values. Null when none matches.
 */
export function jpegQuality(jpeg: Buffer): number | null {
  let table: number[] | null = null;
  for (let i = 2; i + 4 < jpeg.length && !table; ) {
    if (jpeg[i] !== 0xff) return null;
    const marker = jpeg[i + 1]!;
    const len = jpeg.readUInt16BE(i + 2);
    if (marker === 0xdb && (jpeg[i + 4]! & 0xf0) === 0) table = [...jpeg.subarray(i + 5, i + 5 + 64)];
    i += 2 + len;
  }
  if (!table) return null;
  const want = [...table].sort((a, b) => a - b).join();
  for (let q = 1; q <= 100; q++) {
    const scale = q < 50 ? 5000 / q : 200 - 2 * q;
    const scaled = IJG_LUMA.map((v) => Math.min(255, Math.max(1, Math.floor((v * scale + 50) / 100)))).sort((a, b) => a - b);
    if (scaled.join() === want) return q;
  }
  return null;
}
