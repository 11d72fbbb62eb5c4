import type { FieldError } from '../../core/errors.js';
import type { MediaInfo } from '../manifest.js';
import { UPSCALE_METHODS, type UpscaleMethod } from '../upscaler/methods.js';

/**
 * image_upscale's limits and input checks: what the API needs for pricing and validation,
 * without sharp (the runner in upscale.ts loads it on the first run).
 */

export const UPSCALE = {
  scale: 2,
  maxOutputSide: 8192,
  maxOutputMegapixels: 64,
} as const;

/** image_upscale's default: the learned correction costs well under the +1 s per input MP allowed (docs/benchmarks.md). */
export const DEFAULT_UPSCALE_METHOD: UpscaleMethod = 'learned';
export { UPSCALE_METHODS, type UpscaleMethod };

/** The largest input whose output fits: 64 MP out is 16 MP in. */
export const UPSCALE_MAX_INPUT_PIXELS = (UPSCALE.maxOutputMegapixels * 1_000_000) / (UPSCALE.scale * UPSCALE.scale);

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

/**
 * Decoded bytes a pixel image_upscale takes at most: 16-bit RGBA (docs/decisions.md, "image_upscale
 * is priced by decoded bytes"). Its memory and CPU follow these bytes; a float or many-band image
 * would hold a worker's memory past what docs/operator-guide.md sizes it for.
 */
export const MAX_BYTES_PER_PIXEL = 8;
/** The bytes a megapixel costs 1 Spark for: a megapixel of 8-bit RGB, the price before issue 34. */
export const BYTES_PER_SPARK = 3_000_000;

/**
 * Bytes of one pixel as the image decodes (channels x bytes a sample); a row probed before these
 * were recorded counts as the most accepted (16-bit RGBA).
 */
export function bytesPerPixel(m: MediaInfo): number {
  if (!m.channels || !m.bitsPerSample) return MAX_BYTES_PER_PIXEL;
  return m.channels * Math.ceil(m.bitsPerSample / 8);
}

/** 2 Sparks plus 1 per started 3 MB of decoded pixels, a pixel counting at least 3 bytes (the network reads every pixel's luma). */
export function upscaleSparks(m: MediaInfo | undefined): number {
  if (!m || !m.width || !m.height) return 2;
  return 2 + Math.ceil((m.width * m.height * Math.max(3, bytesPerPixel(m))) / BYTES_PER_SPARK);
}

/** The manifest's validate(): a 422 on the image slot when 2x would pass the output limits, or a pixel decodes past 8 bytes. */
export function validateUpscale(media: MediaInfo[] | undefined): FieldError[] {
  const m = media?.[0];
  if (!m || m.width === null || m.height === null) return [];
  const problem = upscaleLimitProblem(m.width, m.height);
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
