import sharp, { type Metadata, type OutputInfo } from 'sharp';
import { ToolError, type RunContext, type ToolOutput } from '../manifest.js';
import { decodeTable, LUMA_B, LUMA_G, LUMA_R, lookup, SeededNoise, smooth01 } from './color.js';
import { abortable, configureSharp, decodeFailure, outputFormat, outputName, throwIfStopped, writeEncoded } from './common.js';
import { GRADE_MAX_PIXELS } from './grade-rules.js';
import { planGrade, settingsFrom, type GradePlan, type GradeSettings } from './looks.js';

/**
 * image_color_grade: decodes the image (orientation applied, converted to sRGB) to one raw
 * buffer of 8- or 16-bit samples, grades it in place band by band (a band is about 256 K
 * pixels; the signal is checked and progress reported between bands, and the event loop gets a
 * turn so a cancel can land), then encodes it in the input's format. Memory: the raw buffer
 * (3 or 4 bytes a pixel, 8 for 16-bit: 192 MB at the 64 MP limit) plus the encoded output; the
 * grading itself allocates nothing per band.
 */

const BAND_PIXELS = 1 << 18;

type Samples = Uint8Array | Uint16Array;

export interface RasterShape {
  width: number;
  height: number;
  channels: number;
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Grades rows y0..y1 of an interleaved RGB(A) buffer in place. Alpha is left as it is. */
function gradeRows(px: Samples, shape: RasterShape, y0: number, y1: number, plan: GradePlan, ctx: { dec: Float32Array; maxCode: number; colVig: Float32Array | null; noise: SeededNoise }): void {
  const { width, height, channels } = shape;
  const { dec, maxCode, colVig, noise } = ctx;
  const [gr, gg, gb] = plan.gains;
  const [cr, cg, cb] = plan.curves;
  const sat = plan.saturation;
  const sh = plan.shoulder;
  const amp = plan.grain;
  const vig = plan.vignette;
  const cy = height / 2;
  for (let y = y0; y < y1; y++) {
    const dy = (y + 0.5 - cy) / cy;
    const rowTerm = (dy * dy) / 2;
    let i = y * width * channels;
    for (let x = 0; x < width; x++, i += channels) {
      let v = 1;
      if (colVig) v = 1 - vig * smooth01((colVig[x]! + rowTerm - 0.25) / 0.75);
      let r = dec[px[i]!]! * gr * v;
      let g = dec[px[i + 1]!]! * gg * v;
      let b = dec[px[i + 2]!]! * gb * v;
      if (sat !== 1) {
        const yl = LUMA_R * r + LUMA_G * g + LUMA_B * b;
        r = yl + sat * (r - yl);
        g = yl + sat * (g - yl);
        b = yl + sat * (b - yl);
      }
      if (sh) {
        r = sh(r);
        g = sh(g);
        b = sh(b);
      }
      let vr = lookup(cr, r);
      let vg = lookup(cg, g);
      let vb = lookup(cb, b);
      if (amp > 0) {
        const l = LUMA_R * vr + LUMA_G * vg + LUMA_B * vb;
        const n = noise.gauss() * amp * (0.3 + 2.8 * l * (1 - l));
        vr += n;
        vg += n;
        vb += n;
      }
      px[i] = vr <= 0 ? 0 : vr >= 1 ? maxCode : (vr * maxCode + 0.5) | 0;
      px[i + 1] = vg <= 0 ? 0 : vg >= 1 ? maxCode : (vg * maxCode + 0.5) | 0;
      px[i + 2] = vb <= 0 ? 0 : vb >= 1 ? maxCode : (vb * maxCode + 0.5) | 0;
    }
  }
}

/**
 * Grades a decoded sRGB raster in place, band by band. Rejects as soon as the signal fires
 * (checked before every band); onBand gets the fraction of rows done.
 */
export async function gradeRaster(
  px: Samples,
  shape: RasterShape,
  settings: GradeSettings,
  seed: string,
  signal: AbortSignal,
  onBand: (fraction: number) => void = () => undefined,
): Promise<void> {
  if (shape.channels < 3) throw new Error('gradeRaster needs RGB or RGBA samples');
  const plan = planGrade(settings);
  const maxCode = px instanceof Uint16Array ? 65535 : 255;
  let colVig: Float32Array | null = null;
  if (plan.vignette > 0) {
    colVig = new Float32Array(shape.width);
    const cx = shape.width / 2;
    for (let x = 0; x < shape.width; x++) {
      const dx = (x + 0.5 - cx) / cx;
      colVig[x] = (dx * dx) / 2;
    }
  }
  const ctx = { dec: decodeTable(maxCode), maxCode, colVig, noise: new SeededNoise(seed) };
  const rows = Math.max(1, Math.floor(BAND_PIXELS / shape.width));
  for (let y0 = 0; y0 < shape.height; y0 += rows) {
    await nextTurn();
    throwIfStopped(signal);
    const y1 = Math.min(shape.height, y0 + rows);
    gradeRows(px, shape, y0, y1, plan, ctx);
    onBand(y1 / shape.height);
  }
}

export interface GradeOptions {
  input: string;
  inputName: string;
  outDir: string;
  settings: GradeSettings;
  /** Seeds the grain: the same seed gives the same output. */
  seed: string;
  signal: AbortSignal;
  progress(fraction: number): void;
  timeoutSeconds: number;
}

/** Grades one image file into outDir: same size (orientation applied) and format. */
export async function gradeImage(opts: GradeOptions): Promise<ToolOutput> {
  configureSharp();
  throwIfStopped(opts.signal);
  const open = () => sharp(opts.input, { limitInputPixels: GRADE_MAX_PIXELS, failOn: 'error' }).timeout({ seconds: opts.timeoutSeconds });
  let meta: Metadata;
  let decoded: { data: Buffer; info: OutputInfo };
  let deep: boolean;
  try {
    meta = await abortable(open().metadata(), opts.signal);
    // 16-bit PNG and TIFF are graded and written in 16 bits; everything else in 8.
    deep = meta.depth === 'ushort' && ['png', 'tiff'].includes(outputFormat(meta).ext);
    decoded = await abortable(
      open()
        .autoOrient()
        .toColourspace(deep ? 'rgb16' : 'srgb')
        .raw(deep ? { depth: 'ushort' } : {})
        .toBuffer({ resolveWithObject: true }),
      opts.signal,
    );
  } catch (err) {
    throwIfStopped(opts.signal);
    throw decodeFailure(err);
  }
  opts.progress(0.15);
  const { data, info } = decoded;
  const shape: RasterShape = { width: info.width, height: info.height, channels: info.channels };
  let px: Samples = data;
  if (deep) {
    // A view when aligned (sharp's buffers are), a copy otherwise.
    px = data.byteOffset % 2 === 0 ? new Uint16Array(data.buffer, data.byteOffset, data.length / 2) : new Uint16Array(Uint8Array.from(data).buffer);
  }
  await gradeRaster(px, shape, opts.settings, opts.seed, opts.signal, (f) => opts.progress(0.15 + 0.75 * f));

  const out = outputFormat(meta);
  let img = sharp(px, { raw: { width: shape.width, height: shape.height, channels: shape.channels === 4 ? 4 : 3 } }).timeout({ seconds: opts.timeoutSeconds });
  if (px instanceof Uint16Array) img = img.toColourspace('rgb16');
  let encoded: { data: Buffer; info: OutputInfo };
  try {
    encoded = await abortable(out.encode(img).toBuffer({ resolveWithObject: true }), opts.signal);
  } catch (err) {
    throwIfStopped(opts.signal);
    throw decodeFailure(err);
  }
  opts.progress(0.95);
  throwIfStopped(opts.signal);
  return writeEncoded(opts.outDir, outputName(opts.inputName, 'graded', out), out, encoded);
}

/** The tool's runner: grain is seeded from the run id, so a run's output is reproducible. */
export async function runGrade(ctx: RunContext, timeoutSeconds: number): Promise<ToolOutput[]> {
  const image = ctx.files.image?.[0];
  if (!image) throw new ToolError('image_color_grade needs one image.');
  const out = await gradeImage({
    input: image.path,
    inputName: image.fileName,
    outDir: ctx.workDir,
    settings: settingsFrom(ctx.values),
    seed: `image_color_grade:${ctx.runId}`,
    signal: ctx.signal,
    progress: ctx.progress,
    timeoutSeconds,
  });
  return [out];
}
