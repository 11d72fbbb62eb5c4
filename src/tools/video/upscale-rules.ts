import type { FieldError } from '../../core/errors.js';
import { MAX_VIDEO_PIXELS } from '../../media/limits.js';
import { stringValue, type MediaInfo, type PricingInput } from '../manifest.js';
import { UPSCALE_METHODS, type UpscaleMethod } from '../upscaler/methods.js';
import { REFERENCE, upscaleWork, type UpscaleWork } from './upscale-work.js';

/**
 * video_upscale's targets and input check: what the API needs for pricing and validation,
 * without the ffmpeg wrappers (the runner in upscale.ts loads them on the first run).
 */

export const TARGET_HEIGHTS: Record<string, number> = { '1080p': 1080, '4k': 2160 };
/** The Lanczos path's ffmpeg time limit (one process, as before issue 28). */
export const UPSCALE_TIMEOUT_SECONDS = 3600;

export { UPSCALE_METHODS, type UpscaleMethod };
/**
 * learned, since its video network met issue 38's bar (CPU at most 6x the Lanczos path's, +0.8 dB
 * over it, no more flicker: bench:video-learned, docs/decisions.md "A network for video frames").
 * A run that does not name a method gets learned when its work fits the learned path's time
 * limit, and lanczos when it does not (defaultMethod): what the service took before stays taken.
 */
export const DEFAULT_UPSCALE_METHOD: UpscaleMethod = 'learned';

/**
 * The method a run uses: the one it names, else the default for its video (the file's probe, or
 * the clip duration_seconds prices), the same at estimate, at start and in the runner.
 */
export function upscaleMethod(input: PricingInput): UpscaleMethod {
  const name = stringValue(input, 'method', '');
  const named = UPSCALE_METHODS.find((m) => m === name);
  if (named) return named;
  const target = stringValue(input, 'target', '1080p');
  const height = TARGET_HEIGHTS[target];
  const given = input.media.video?.[0];
  if (!height || (!given && input.durationHint === null)) return DEFAULT_UPSCALE_METHOD;
  return defaultMethod(given ?? hintClip(input.durationHint ?? 0, target), height);
}

/** learned, unless its work on this video would pass its time limit (then lanczos, which refuses no length up front). */
function defaultMethod(info: MediaInfo, targetHeight: number): UpscaleMethod {
  const work = upscaleWork(info, targetHeight, 'learned');
  return work && learnedSeconds(work) > LEARNED_LIMIT_SECONDS ? 'lanczos' : 'learned';
}

/**
 * The learned path's time limit grows with the work it was priced for (docs/decisions.md,
 * "video_upscale learned: a time limit that grows with the priced length"): a fixed allowance for
 * starting up and finishing the file, plus, for every priced frame, LEARNED_SECONDS_PER_MP per
 * megapixel the network reads (the video network took ~0.27 wall s/MP on a busy 2-core machine
 * with VNNI, and may take ~2.75 times that without; the image network it replaced took 1.5) and
 * LEARNED_ENCODE_SECONDS_PER_MP per megapixel encoded (the Lanczos path took ~0.011 s/MP at
 * 1080p). Work whose limit would pass LEARNED_LIMIT_SECONDS is refused before it starts
 * (validateUpscale), so every accepted run's limit is this sum.
 */
export const LEARNED_BASE_SECONDS = 600;
export const LEARNED_SECONDS_PER_MP = 3;
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

/** The longest 960x540 25 fps clip the learned path takes to 1080p in a run, in whole minutes (what the messages quote). */
export function learnedMinutesAt540p(): number {
  const perFrame = (960 * 540 * LEARNED_SECONDS_PER_MP + 1920 * 1080 * LEARNED_ENCODE_SECONDS_PER_MP) / 1e6;
  return Math.floor((LEARNED_LIMIT_SECONDS - LEARNED_BASE_SECONDS) / perFrame / 25 / 60);
}

export function learnedTimeLimitSeconds(work: Pick<UpscaleWork, 'frames' | 'inputPixels' | 'outputPixels'>): number {
  return Math.min(LEARNED_LIMIT_SECONDS, learnedSeconds(work));
}

const VIDEO = ['body', 'inputs', 'video'];
const mp = (pixels: number) => `${Number((pixels / 1e6).toFixed(1))} MP`;

/**
 * What duration_seconds alone prices (no file yet, so no frames or size): a clip of that length at
 * 30 fps in the target's reference size (1280x720 to 1080p, 1920x1080 to 4K), the ordinary video
 * whose price per started 10 s never changed (docs/decisions.md, "duration_seconds prices
 * video_upscale as its reference clip"). The uploaded file prices the run itself (estimate with its
 * id = hold = charge); more frames or larger ones cost more than this.
 */
export const HINT_RATE = 30;

export function hintClip(seconds: number, target: string): MediaInfo {
  const [width, height] = (REFERENCE[target] ?? REFERENCE['1080p']!).input;
  return { kind: 'video', width, height, durationSeconds: seconds, frameRate: HINT_RATE, frames: Math.max(1, Math.ceil(seconds * HINT_RATE - 1e-9)) };
}

/**
 * The video slot's 422s: an input already at or above the target height, output frames larger
 * than a video may hold (the output check would refuse them after all the work), and learned work
 * past its time limit; for duration_seconds alone, the last one at duration_seconds.
 */
export function validateUpscale(input: PricingInput): FieldError[] {
  const given = input.media.video?.[0];
  if (!given && input.durationHint === null) return [];
  const v = given ?? hintClip(input.durationHint ?? 0, stringValue(input, 'target', '1080p'));
  const loc = given ? VIDEO : ['body', 'duration_seconds'];
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
      loc,
      message:
        `${given ? 'is' : `prices a ${HINT_RATE} fps clip of that length:`} ${work.frames} frames of ${v.width} x ${v.height} px (${frameMp} frame-megapixels through the network), more than method learned ` +
        `takes in a run: its time limit (${LEARNED_BASE_SECONDS} s + ${LEARNED_SECONDS_PER_MP} s per input frame-megapixel + ` +
        `${LEARNED_ENCODE_SECONDS_PER_MP} s per output frame-megapixel) would pass ${Math.round(LEARNED_LIMIT_SECONDS / 3600)} h ` +
        `(about ${learnedMinutesAt540p()} minutes of 960x540 at 25 fps to 1080p fit); use method lanczos, or a shorter clip`,
      code: 'too_large',
    }];
  }
  return [];
}
