import fs from 'node:fs/promises';
import path from 'node:path';
import sharp, { type Metadata, type Sharp } from 'sharp';
import { ToolError, type RunContext, type ToolOutput } from '../manifest.js';
import { abortable, configureSharp, decodeFailure, encodeToFile, orientedSize, outputFormat, outputName, throwIfStopped } from './common.js';
import { lanczosPasses } from './lanczos.js';
import { applyLearned, rawInput, rawOf } from './learned.js';
import { writePng } from './png-writer.js';
import { sharedLumaNet, type LumaNet } from '../upscaler/luma-net.js';
import { UPSCALE_MAX_INPUT_PIXELS, upscaleLimitProblem, upscaleScale, type UpscaleMethod, type UpscaleScale } from './upscale-rules.js';

/**
 * image_upscale: 2x or 4x each side with a centred Lanczos3 (lanczos.ts), orientation applied, profile
 * kept; the `learned` method (the default) then adds the network's luma correction (learned.ts).
 * No sharpening: measured against the reference it only moved the output away from it
 * (docs/decisions.md).
 */


export interface UpscaleOptions {
  input: string;
  inputName: string;
  outDir: string;
  signal: AbortSignal;
  progress(fraction: number): void;
  /** libvips' own time limit for the pipeline, so abandoned work stops too. */
  timeoutSeconds: number;
  /** Default `learned`. */
  method?: UpscaleMethod;
  /** Each side's factor; default 2. */
  scale?: UpscaleScale;
  /** The network for `learned`, made for `scale`; default the process's own (the shipped model of that factor and input kind). */
  net?: LumaNet;
}

/**
 * Whether the file's pixels are as a lossless encoder kept them: PNG (not palette: a palette is a
 * quantisation) and TIFF. JPEG, WebP, AVIF/HEIF and GIF may carry compression artefacts, so they
 * get the model trained not to sharpen those (LumaInputs).
 */
export function losslessInput(meta: Pick<Metadata, 'format' | 'isPalette'>): boolean {
  return (meta.format === 'png' && meta.isPalette !== true) || meta.format === 'tiff';
}

/** Upscales one image file into outDir. */
export async function upscaleImage(opts: UpscaleOptions): Promise<ToolOutput> {
  const scale = opts.scale ?? 2;
  // A caller's mistake, not the image's: said before any work, not as a decoding failure.
  if (opts.net && opts.net.scale !== scale) throw new Error(`the x${opts.net.scale} network cannot correct a ${scale}x upscale`);
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
  const problem = upscaleLimitProblem(width, height, scale);
  if (problem) throw new ToolError(`The image is too large to upscale: ${problem}.`);
  opts.progress(0.1);

  const format = outputFormat(meta);
  const depth = meta.depth === 'ushort' ? 'ushort' : 'uchar';
  const passes = lanczosPasses(scale, depth, { alpha: meta.hasAlpha === true });
  // The bands resampled: a CMYK input arrives converted to sRGB (3, or 4 with alpha).
  const bands = meta.space === 'cmyk' ? (meta.hasAlpha ? 4 : 3) : (meta.channels ?? 3);
  const shift = (add: number) => [new Array<number>(bands).fill(1), new Array<number>(bands).fill(add)] as const;
  // Keep the input's ICC profile and its pixel values (no conversion to sRGB). A CMYK input is
  // converted to sRGB instead: a CMYK profile cannot describe the RGB pixels that are resampled.
  const keepProfile = meta.hasProfile === true && meta.space !== 'cmyk';
  const sixteen = (img: Sharp) => (meta.space === 'grey16' || meta.space === 'b-w' ? img.toColourspace('grey16') : img.toColourspace('rgb16'));
  // Pass 1 (horizontal) goes through an uncompressed PNG in the work directory: it carries the
  // profile, alpha and 16-bit samples to pass 2 unchanged (a raw buffer loses the profile), and
  // PNG stores the 8- or 16-bit samples the headroom in lanczos.ts is made for (a TIFF would keep
  // libvips' float result and be read back as linear light).
  const between = path.join(opts.outDir, '.upscale-horizontal.png');
  try {
    let first = open()
      .timeout({ seconds: opts.timeoutSeconds })
      .rotate()
      .resize(width * scale, height, { kernel: 'nearest', fit: 'fill' })
      .convolve(passes.horizontal.kernel)
      .linear(...shift(passes.horizontal.add));
    if (keepProfile) first = first.keepIccProfile();
    if (depth === 'ushort') first = sixteen(first);
    await abortable(first.png({ compressionLevel: 0, adaptiveFiltering: false }).toFile(between), opts.signal);
  } catch (err) {
    throwIfStopped(opts.signal);
    throw decodeFailure(err);
  }
  opts.progress(0.5);
  let img = sharp(between, { limitInputPixels: false, failOn: 'error' })
    .timeout({ seconds: opts.timeoutSeconds })
    .resize(width * scale, height * scale, { kernel: 'nearest', fit: 'fill' })
    .convolve(passes.vertical.kernel)
    .linear(...shift(passes.vertical.add));
  if (keepProfile) img = img.keepIccProfile();
  // 16-bit PNG and TIFF stay 16-bit (sharp writes 8 bits unless told).
  const outDepth = depth === 'ushort' && (format.ext === 'png' || format.ext === 'tiff') ? 'ushort' : 'uchar';
  if (outDepth === 'ushort') img = sixteen(img);
  let out: ToolOutput;
  const learnedFile = path.join(opts.outDir, '.upscale-learned.png');
  try {
    if ((opts.method ?? 'learned') === 'learned') {
      // The same pixels as the Lanczos3 path, corrected, then the same encoder (learned.ts).
      let low = open().timeout({ seconds: opts.timeoutSeconds }).rotate();
      if (keepProfile) low = low.keepIccProfile();
      if (depth === 'ushort') low = sixteen(low);
      const lowRaw = await abortable(rawOf(low, depth), opts.signal);
      // The second pass runs in libvips while the network starts on the luma (applyLearned).
      const upscaled = await applyLearned(opts.net ?? sharedLumaNet(scale, losslessInput(meta) ? 'lossless' : 'any'), lowRaw, abortable(rawOf(img, outDepth), opts.signal), opts.signal, (f) =>
        opts.progress(0.5 + 0.3 * f),
      );
      if (keepProfile) {
        // Raw pixels cannot carry a profile into sharp unconverted; a PNG with it can (png-writer.ts).
        await writePng(learnedFile, upscaled, meta.icc);
        img = sharp(learnedFile, { limitInputPixels: false, failOn: 'error' }).keepIccProfile();
      } else {
        img = sharp(rawInput(upscaled), { raw: { width: upscaled.width, height: upscaled.height, channels: upscaled.channels }, limitInputPixels: false });
      }
      img = img.timeout({ seconds: opts.timeoutSeconds });
      if (outDepth === 'ushort') img = sixteen(img);
    }
    out = await encodeToFile(img, opts.outDir, outputName(opts.inputName, 'upscaled', format), format, opts.signal);
  } catch (err) {
    throwIfStopped(opts.signal);
    throw decodeFailure(err);
  } finally {
    await fs.rm(between, { force: true });
    await fs.rm(learnedFile, { force: true });
  }
  opts.progress(0.9);
  throwIfStopped(opts.signal);
  return out;
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
    method: ctx.values.method === 'lanczos' ? 'lanczos' : 'learned',
    scale: upscaleScale(ctx.values),
  });
  return [out];
}
