import type { FieldError } from '../../core/errors.js';
import { stringValue, type PricingInput } from '../manifest.js';

/**
 * video_upscale's targets and input check: what the API needs for pricing and validation,
 * without the ffmpeg wrappers (the runner in upscale.ts loads them on the first run).
 */

export const TARGET_HEIGHTS: Record<string, number> = { '1080p': 1080, '4k': 2160 };
export const UPSCALE_TIMEOUT_SECONDS = 3600;

/** An input already at or above the target height has nothing to gain: 422 on the video slot. */
export function validateUpscale(input: PricingInput): FieldError[] {
  const v = input.media.video?.[0];
  const target = TARGET_HEIGHTS[stringValue(input, 'target', '1080p')];
  if (!v || v.height === null || !target || v.height < target) return [];
  return [
    {
      loc: ['body', 'inputs', 'video'],
      message: `is already ${v.height} px high, at or above the ${target} px target`,
      code: 'already_at_target',
    },
  ];
}
