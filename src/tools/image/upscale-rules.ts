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

/** The manifest's validate(): a 422 on the image slot when 2x would pass the output limits. */
export function validateUpscale(media: MediaInfo[] | undefined): FieldError[] {
  const m = media?.[0];
  if (!m || m.width === null || m.height === null) return [];
  const problem = upscaleLimitProblem(m.width, m.height);
  return problem ? [{ loc: ['body', 'inputs', 'image'], message: problem, code: 'too_large' }] : [];
}
