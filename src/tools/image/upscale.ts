import fs from 'node:fs/promises';
import path from 'node:path';
import sharp, { type Metadata } from 'sharp';
import { ToolError, type RunContext, type ToolOutput } from '../manifest.js';
import { abortable, configureSharp, decodeFailure, orientedSize, outputFormat, outputName, throwIfStopped } from './common.js';
import { UPSCALE, UPSCALE_MAX_INPUT_PIXELS, upscaleLimitProblem } from './upscale-rules.js';

/** image_upscale: 2x each side, Lanczos3 and a light sharpen, orientation applied, profile kept. */

/** Light sharpening after the resample: a small radius, gentle on flat areas and on edges. */
const SHARPEN = { sigma: 0.6, m1: 0.5, m2: 1.5 } as const;

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
