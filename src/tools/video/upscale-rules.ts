import type { FieldError } from '../../core/errors.js';
import { MAX_VIDEO_PIXELS } from '../../media/limits.js';
import { stringValue, type PricingInput } from '../manifest.js';
import { UPSCALE_METHODS, type UpscaleMethod } from '../upscaler/methods.js';
import { upscaleWork, type UpscaleWork } from './upscale-work.js';

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

export function upscaleMethod(input: PricingInput): UpscaleMethod {
  const name = stringValue(input, 'method', DEFAULT_UPSCALE_METHOD);
  return UPSCALE_METHODS.find((m) => m === name) ?? DEFAULT_UPSCALE_METHOD;
}

/**
 * The learned path's time limit grows with the work it was priced for (docs/decisions.md,
 * "video_upscale learned: a time limit that grows with the priced length"): a fixed allowance for
 * starting up and finishing the file, plus, for every priced frame, LEARNED_SECONDS_PER_MP per
 * megapixel the network reads (the bench measured 1.5 s/MP on a busy 2-core machine) and
 * LEARNED_ENCODE_SECONDS_PER_MP per megapixel encoded (the Lanczos path took ~0.011 s/MP at
 * 1080p). Work whose limit would pass LEARNED_LIMIT_SECONDS is refused before it starts
 * (validateUpscale), so every accepted run's limit is this sum.
 */
export const LEARNED_BASE_SECONDS = 600;
export const LEARNED_SECONDS_PER_MP = 8;
export const LEARNED_ENCODE_SECONDS_PER_MP = 0.1;
/** The engine's limit for a video_upscale run: what the longest learned run may be given. */
export const UPSCALE_RUN_LIMIT_SECONDS = 86_400;
/** A minute short of the engine's limit, so that the runner's own message (and kill) comes first. */
export const LEARNED_LIMIT_SECONDS = UPSCALE_RUN_LIMIT_SECONDS - 60;

/** The learned path's time limit for `work`, before the cap; over LEARNED_LIMIT_SECONDS it is refused. */
export function learnedSeconds(work: Pick<UpscaleWork, 'frames' | 'inputPixels' | 'outputPixels'>): number {
  const perFrame = (work.inputPixels * LEARNED_SECONDS_PER_MP + work.outputPixels * LEARNED_ENCODE_SECONDS_PER_MP) / 1e6;
  return Math.ceil(LEARNED_BASE_SECONDS + work.frames * perFrame);
}

export function learnedTimeLimitSeconds(work: Pick<UpscaleWork, 'frames' | 'inputPixels' | 'outputPixels'>): number {
  return Math.min(LEARNED_LIMIT_SECONDS, learnedSeconds(work));
}

const VIDEO = ['body', 'inputs', 'video'];
const mp = (pixels: number) => `${Number((pixels / 1e6).toFixed(1))} MP`;

/**
 * The video slot's 422s: no file (duration_seconds cannot price what frames and sizes decide),
 * an input already at or above the target height, output frames larger than a video may hold
 * (the output check would refuse them after all the work), and learned work past its time limit.
 */
export function validateUpscale(input: PricingInput): FieldError[] {
  const v = input.media.video?.[0];
  if (!v) {
    if (input.durationHint === null) return [];
    return [{
      loc: VIDEO,
      message:
        'is required to price video_upscale: its price follows the frames and their size (a 240 fps clip costs up to 8 times a 30 fps one ' +
        'of the same length), which duration_seconds alone does not tell; upload the video and estimate with its id',
      code: 'missing',
    }];
  }
  const targetName = stringValue(input, 'target', '1080p');
  const target = TARGET_HEIGHTS[targetName];
  if (v.height === null || !target) return [];
  if (v.height >= target) {
    return [{ loc: VIDEO, message: `is already ${v.height} px high, at or above the ${target} px target`, code: 'already_at_target' }];
  }
  const method = upscaleMethod(input);
  const work = upscaleWork(v, target, method);
  if (!work) return [];
  if (work.outputPixels > MAX_VIDEO_PIXELS) {
    return [{
      loc: VIDEO,
      message: `would give frames of ${work.outputWidth} x ${target} px (${mp(work.outputPixels)}); a video may hold at most ${mp(MAX_VIDEO_PIXELS)} (8192 x 4320)`,
      code: 'too_large',
    }];
  }
  if (method === 'learned' && learnedSeconds(work) > LEARNED_LIMIT_SECONDS) {
    const frameMp = Math.round((work.frames * work.inputPixels) / 1e6);
    return [{
      loc: VIDEO,
      message:
        `is ${work.frames} frames of ${v.width} x ${v.height} px (${frameMp} frame-megapixels through the network), more than method learned ` +
        `takes in a run: its time limit (${LEARNED_BASE_SECONDS} s + ${LEARNED_SECONDS_PER_MP} s per input frame-megapixel + ` +
        `${LEARNED_ENCODE_SECONDS_PER_MP} s per output frame-megapixel) would pass ${Math.round(LEARNED_LIMIT_SECONDS / 3600)} h ` +
        '(about 13 minutes of 960x540 at 25 fps to 1080p fit); use method lanczos, or a shorter clip',
      code: 'too_large',
    }];
  }
  return [];
}
