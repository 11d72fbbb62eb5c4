import type { FieldError } from '../../core/errors.js';
import type { MediaInfo } from '../manifest.js';
import { UPSCALE_METHODS, type UpscaleMethod } from '../upscaler/methods.js';

/**
 * image_upscale's limits and input checks: what the API needs for pricing and validation,
 * without sharp (the runner in upscale.ts loads it on the first run).
 */

/** The factors image_upscale enlarges each side by (its `scale` input); 2 unless asked. */
export const UPSCALE_SCALES = [2, 4] as const;
export type UpscaleScale = (typeof UPSCALE_SCALES)[number];
export const DEFAULT_UPSCALE_SCALE: UpscaleScale = 2;

/** Limits on the output, whatever the factor: the input may be 4x smaller in pixels at 4x. */
export const UPSCALE = {
  maxOutputSide: 8192,
  maxOutputMegapixels: 64,
} as const;

/** image_upscale's default: the learned correction costs well under the +1 s per input MP allowed (docs/benchmarks.md). */
export const DEFAULT_UPSCALE_METHOD: UpscaleMethod = 'learned';
export { UPSCALE_METHODS, type UpscaleMethod };

/** The largest input whose output fits at this factor: 64 MP out is 16 MP in at 2x, 4 MP at 4x. */
export function maxInputPixels(scale: UpscaleScale): number {
  return (UPSCALE.maxOutputMegapixels * 1_000_000) / (scale * scale);
}

/** The largest input any factor takes (sharp's decode limit for the runner). */
export const UPSCALE_MAX_INPUT_PIXELS = maxInputPixels(2);

/** The `scale` value of validated inputs (the slot's check allows 2 and 4 only). */
export function upscaleScale(values: Record<string, unknown>): UpscaleScale {
  return values.scale === 4 ? 4 : 2;
}

/** Why an input of this (oriented) size cannot be upscaled at this factor, or null when it can. */
export function upscaleLimitProblem(width: number, height: number, scale: UpscaleScale): string | null {
  const w = width * scale;
  const h = height * scale;
  if (w > UPSCALE.maxOutputSide || h > UPSCALE.maxOutputSide) {
    return `the output would be ${w} x ${h} px; image_upscale makes at most ${UPSCALE.maxOutputSide} px a side (inputs up to ${UPSCALE.maxOutputSide / scale} px at scale ${scale})`;
  }
  if (w * h > UPSCALE.maxOutputMegapixels * 1_000_000) {
    return `the output would be ${w} x ${h} px (${((w * h) / 1_000_000).toFixed(1)} MP); image_upscale makes at most ${UPSCALE.maxOutputMegapixels} megapixels (inputs up to ${maxInputPixels(scale) / 1_000_000} MP at scale ${scale})`;
  }
  return null;
}

/**
 * Decoded bytes a pixel image_upscale takes at most: 16-bit RGBA (docs/decisions.md, "image_upscale
 * is priced by decoded bytes"). Its memory and CPU follow these bytes; a float or many-band image
 * would hold a worker's memory past what docs/operator-guide.md sizes it for.
 */
export const MAX_BYTES_PER_PIXEL = 8;
/**
 * Output bytes 1 Spark pays for: 12 MB, four megapixels of 8-bit RGB out, which is the 3 MB of
 * input a Spark paid for before `scale` existed (2x makes four output pixels of each input one).
 */
export const OUTPUT_BYTES_PER_SPARK = 12_000_000;

/**
 * Bytes of one pixel as the image decodes (channels x bytes a sample); a row probed before these
 * were recorded counts as the most accepted (16-bit RGBA).
 */
export function bytesPerPixel(m: MediaInfo): number {
  if (!m.channels || !m.bitsPerSample) return MAX_BYTES_PER_PIXEL;
  return m.channels * Math.ceil(m.bitsPerSample / 8);
}

/**
 * 2 Sparks plus 1 per started 12 MB of decoded output pixels, a pixel counting at least 3 bytes
 * (the network reads every pixel's luma): the price follows the output, so 4x costs four times
 * what 2x does for the same input (docs/decisions.md).
 */
export function upscaleSparks(m: MediaInfo | undefined, scale: UpscaleScale): number {
  if (!m || !m.width || !m.height) return 2;
  return 2 + Math.ceil((m.width * m.height * scale * scale * Math.max(3, bytesPerPixel(m))) / OUTPUT_BYTES_PER_SPARK);
}

/** The manifest's validate(): a 422 on the image slot when the factor would pass the output limits, or a pixel decodes past 8 bytes. */
export function validateUpscale(media: MediaInfo[] | undefined, scale: UpscaleScale): FieldError[] {
  const m = media?.[0];
  if (!m || m.width === null || m.height === null) return [];
  const problem = upscaleLimitProblem(m.width, m.height, scale);
  if (problem) return [{ loc: ['body', 'inputs', 'image'], message: problem, code: 'too_large' }];
  const bytes = bytesPerPixel(m);
  if (bytes > MAX_BYTES_PER_PIXEL) {
    return [{
      loc: ['body', 'inputs', 'image'],
      message:
        `decodes to ${bytes} bytes a pixel (${m.channels} channels of ${m.bitsPerSample} bits); image_upscale takes at most ` +
        `${MAX_BYTES_PER_PIXEL} (RGBA of 16 bits): convert it to 8 or 16 bits a sample`,
      code: 'too_large',
    }];
  }
  return [];
}
