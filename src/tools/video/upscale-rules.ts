import type { FieldError } from '../../core/errors.js';
import { stringValue, type PricingInput } from '../manifest.js';
import { UPSCALE_METHODS, type UpscaleMethod } from '../upscaler/methods.js';

/**
 * video_upscale's targets and input check: what the API needs for pricing and validation,
 * without the ffmpeg wrappers (the runner in upscale.ts loads them on the first run).
 */

export const TARGET_HEIGHTS: Record<string, number> = { '1080p': 1080, '4k': 2160 };
/** The Lanczos path's ffmpeg time limit (one process, as before issue 28). */
export const UPSCALE_TIMEOUT_SECONDS = 3600;

export { UPSCALE_METHODS, type UpscaleMethod };
/**
 * lanczos: at 960x540 -> 1920x1080 the learned path took ~20-33x the Lanczos path's wall time, far
 * past the 4x issue 28 allows for a default (docs/decisions.md), so it is asked for by name.
 */
export const DEFAULT_UPSCALE_METHOD: UpscaleMethod = 'lanczos';
/**
 * What `learned` costs per started 10 s, as a multiple of `lanczos`: the CPU seconds it took per
 * CPU second of the Lanczos path at 540p -> 1080p (bench/video-learned.ts: 23-32x), rounded up to
 * the next multiple of 5 (docs/prices.md says how). The bench fails its figure when the ratio
 * outgrows it, e.g. after a wider model ships.
 */
export const LEARNED_PRICE_FACTOR = 35;

export function upscaleMethod(input: PricingInput): UpscaleMethod {
  const name = stringValue(input, 'method', DEFAULT_UPSCALE_METHOD);
  return UPSCALE_METHODS.find((m) => m === name) ?? DEFAULT_UPSCALE_METHOD;
}

/**
 * The learned path's time limit grows with the work it was priced for (docs/decisions.md,
 * "video_upscale learned: a time limit that grows with the priced length"): a fixed allowance for
 * starting up and finishing the file, plus, for every frame of the priced length at the probed
 * rate, LEARNED_SECONDS_PER_MP per megapixel the network reads (the bench measured 1.5 s/MP on a
 * busy 2-core machine) and LEARNED_ENCODE_SECONDS_PER_MP per megapixel encoded (the Lanczos path
 * took ~0.011 s/MP at 1080p); never beyond the tool's run limit, UPSCALE_RUN_LIMIT_SECONDS.
 */
export const LEARNED_BASE_SECONDS = 600;
export const LEARNED_SECONDS_PER_MP = 8;
export const LEARNED_ENCODE_SECONDS_PER_MP = 0.1;
/** The engine's limit for a video_upscale run: what the longest learned run may be given. */
export const UPSCALE_RUN_LIMIT_SECONDS = 86_400;

export function learnedTimeLimitSeconds(job: { pricedSeconds: number; fps: number; width: number; height: number; targetHeight: number }): number {
  const inMp = (job.width * job.height) / 1e6;
  const outMp = (job.targetHeight * job.targetHeight * (job.width / job.height)) / 1e6;
  const work = job.pricedSeconds * job.fps * (inMp * LEARNED_SECONDS_PER_MP + outMp * LEARNED_ENCODE_SECONDS_PER_MP);
  // A minute short of the engine's limit, so that the runner's own message (and kill) comes first.
  return Math.min(UPSCALE_RUN_LIMIT_SECONDS - 60, Math.ceil(LEARNED_BASE_SECONDS + work));
}

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
