import fs from 'node:fs/promises';
import path from 'node:path';
import sharp, { type Metadata } from 'sharp';
import type { FieldError } from '../../http/errors.js';
import { ToolError, type MediaInfo, type RunContext, type ToolOutput } from '../manifest.js';
import { abortable, configureSharp, decodeFailure, orientedSize, outputFormat, outputName, throwIfStopped } from './common.js';

/** image_upscale: 2x each side, Lanczos3 and a light sharpen, orientation applied, profile kept. */

export const UPSCALE = {
  scale: 2,
  maxOutputSide: 8192,
  maxOutputMegapixels: 64,
} as const;

/** The largest input whose output fits: 64 MP out is 16 MP in. */
export const UPSCALE_MAX_INPUT_PIXELS = (UPSCALE.maxOutputMegapixels * 1_000_000) / (UPSCALE.scale * UPSCALE.scale);

/** Light sharpening after the resample: a small radius, gentle on flat areas and on edges. */
const SHARPEN = { sigma: 0.6, m1: 0.5, m2: 1.5 } as const;

/** Why an input of this (oriented) size cannot be upscaled, or null when it can. */
export function upscaleLimitProblem(width: number, height: number): string | null {
  const w = width * UPSCALE.scale;
  const h = height * UPSCALE.scale;
  if (w > UPSCALE.maxOutputSide || h > UPSCALE.maxOutputSide) {
    return `the output would be ${w} x ${h} px; image_upscale makes at most ${UPSCALE.maxOutputSide} px a side (inputs up to ${UPSCALE.maxOutputSide / UPSCALE.scale} px)`;
  }
  if (w * h > UPSCALE.maxOutputMegapixels * 1_000_000) {
    return `the output would be ${w} x ${h} px (${((w * h) / 1_000_000).toFixed(1)} MP); image_upscale makes at most ${UPSCALE.maxOutputMegapixels} megapixels (inputs up to ${UPSCALE_MAX_INPUT_PIXELS / 1_000_000} MP)`;
  }
  return null;
}

/** The manifest's validate(): a 422 on the image slot when 2x would pass the output limits. */
export function validateUpscale(media: MediaInfo[] | undefined): FieldError[] {
  const m = media?.[0];
  if (!m || m.width === null || m.height === null) return [];
  const problem = upscaleLimitProblem(m.width, m.height);
  return problem ? [{ loc: ['body', 'inputs', 'image'], message: problem, code: 'too_large' }] : [];
}

export interface UpscaleOptions {
  input: string;
  inputName: string;
  outDir: string;
  signal: AbortSignal;
  progress(fraction: number): void;
  /** libvips' own time limit for the pipeline, so abandoned work stops too. */
  timeoutSeconds: number;
}

/** Upscales one image file into outDir. */
export async function upscaleImage(opts: UpscaleOptions): Promise<ToolOutput> {
  configureSharp();
  throwIfStopped(opts.signal);
  const open = () => sharp(opts.input, { limitInputPixels: UPSCALE_MAX_INPUT_PIXELS, failOn: 'error' });
  let meta: Metadata;
  try {
    meta = await abortable(open().metadata(), opts.signal);
  } catch (err) {
    throwIfStopped(opts.signal);
    throw decodeFailure(err);
  }
  const { width, height } = orientedSize(meta);
  const problem = upscaleLimitProblem(width, height);
  if (problem) throw new ToolError(`The image is too large to upscale: ${problem}.`);
  opts.progress(0.1);

  const format = outputFormat(meta);
  let img = open()
    .timeout({ seconds: opts.timeoutSeconds })
    .rotate()
    .resize(width * UPSCALE.scale, height * UPSCALE.scale, { kernel: 'lanczos3', fit: 'fill' })
    .sharpen(SHARPEN);
  // Keep the input's ICC profile and its pixel values (no conversion to sRGB). A CMYK input is
  // converted to sRGB instead: a CMYK profile cannot describe the RGB pixels sharp resizes.
  if (meta.hasProfile && meta.space !== 'cmyk') img = img.keepIccProfile();
  // 16-bit PNG and TIFF stay 16-bit (sharp writes 8 bits unless told).
  if (meta.depth === 'ushort' && (format.ext === 'png' || format.ext === 'tiff')) {
    img = img.toColourspace(meta.space === 'grey16' || meta.space === 'b-w' ? 'grey16' : 'rgb16');
  }
  let bytes: Buffer;
  try {
    bytes = await abortable(format.encode(img).toBuffer(), opts.signal);
  } catch (err) {
    throwIfStopped(opts.signal);
    throw decodeFailure(err);
  }
  opts.progress(0.9);
  throwIfStopped(opts.signal);
  const fileName = outputName(opts.inputName, 'upscaled', format);
  const out = path.join(opts.outDir, fileName);
  await fs.writeFile(out, bytes);
  return { path: out, fileName, mimeType: format.mime };
}

/** The tool's runner. */
export async function runUpscale(ctx: RunContext, timeoutSeconds: number): Promise<ToolOutput[]> {
  const image = ctx.files.image?.[0];
  if (!image) throw new ToolError('image_upscale needs one image.');
  const out = await upscaleImage({
    input: image.path,
    inputName: image.fileName,
    outDir: ctx.workDir,
    signal: ctx.signal,
    progress: ctx.progress,
    timeoutSeconds,
  });
  return [out];
}
