import { MAX_FRAME_RATE } from '../../media/limits.js';
import type { MediaInfo } from '../manifest.js';
import type { UpscaleMethod } from '../upscaler/methods.js';
import { scaledWidth } from './common.js';

/**
 * What a video_upscale run works through and what it costs (docs/decisions.md, "video_upscale is
 * priced by its frames"): its frames, the pixels of each going in and coming out, reckoned from
 * the upload's probe (the file row) the same way at estimate, at start and in the runner, which
 * does no more than this (its ffmpegs stop at `frames`).
 *
 * Price, Sparks:
 * - lanczos: the larger of the price per started 10 s (2 to 1080p, 6 to 4K) and the same price
 *   per 300 frames (10 s at 30 fps) of the target's reference, 1280x720 to 1920x1080 or
 *   1920x1080 to 3840x2160, frames counted in the pixels they are decoded from and encoded to
 *   (the CPU follows both: bench:tools);
 * - learned: the lanczos price of its frames plus 1 per started LEARNED_FRAME_MP_PER_SPARK input
 *   frame-megapixels (the network reads every input pixel of every frame).
 * Ordinary video (up to 30 fps, 16:9 or narrower, at most the reference's size) keeps the price
 * per started 10 s it always had; more frames or larger ones cost what their pixels cost there.
 */

/** Sparks per started 10 s of input, by target: the price before issue 34, now the least a run costs. */
export const PER_10_SECONDS: Record<string, number> = { '1080p': 2, '4k': 6 };
/** The frames a 10 s price covers: 10 s at 30 fps of the target's reference, in and out. */
export const REFERENCE_FRAMES = 300;
export const REFERENCE: Record<string, { input: [number, number]; output: [number, number] }> = {
  '1080p': { input: [1280, 720], output: [1920, 1080] },
  '4k': { input: [1920, 1080], output: [3840, 2160] },
};
/**
 * The CPU seconds a Spark buys on the Lanczos path's 1080p price, the lower of its two: the 1080p
 * reference (10 s of 1280x720 at 30 fps) took 4.8-5.5 CPU s for 2 Sparks (2.4-2.8 a Spark), the 4K
 * one (1920x1080) ~22 for 6, 3.6 a Spark (bench:tools, a 2-core AMD EPYC machine).
 */
export const CPU_SECONDS_PER_SPARK = 2.4;
/**
 * Input frame-megapixels the network's part of 1 Spark pays for, priced for a CPU without VNNI.
 * The video network (issue 38 item 3) takes ~0.18 CPU s per input frame-megapixel more than
 * lanczos on a VNNI machine (AMD EPYC family 25 model 17), its fp32 graph 0.30; without VNNI the
 * image network it replaced took 2.75 times its VNNI figure at worst, so ~0.5 is the bound priced
 * here: 2.4 / 0.5 -> 4.5 (docs/decisions.md, "A network for video frames"). The image network
 * was priced at 2.5 (1.46-1.66 CPU s per frame-megapixel without VNNI).
 */
export const LEARNED_FRAME_MP_PER_SPARK = 4.5;

export interface UpscaleWork {
  /** Frames encoded: lanczos passes the file's own through, learned makes ceil(length x rate). */
  frames: number;
  /** Pixels of one frame in (as displayed) and out (the target height, width as ffmpeg makes it). */
  inputPixels: number;
  outputWidth: number;
  outputPixels: number;
}

/** The rate a run works at: the probed working rate, or the fastest accepted when it is not known. */
export function pricedRate(info: MediaInfo): number {
  const rate = info.frameRate;
  return typeof rate === 'number' && rate > 0 ? Math.min(rate, MAX_FRAME_RATE) : MAX_FRAME_RATE;
}

/**
 * The frames a run makes: `learned` converts to a constant rate (its decoder's -vsync cfr -r),
 * so ceil(length x rate); `lanczos` passes the file's frames through, as many as the upload
 * counted (rows probed before they were counted: the length at the rate).
 */
export function pricedFrames(info: MediaInfo, method: UpscaleMethod): number {
  const seconds = info.durationSeconds ?? 0;
  const atRate = Math.max(1, Math.ceil(seconds * pricedRate(info) - 1e-9));
  if (method === 'learned') return atRate;
  return typeof info.frames === 'number' && info.frames > 0 ? info.frames : atRate;
}

/** The work of upscaling this video to `targetHeight`; null when its size or length is not known. */
export function upscaleWork(info: MediaInfo, targetHeight: number, method: UpscaleMethod): UpscaleWork | null {
  if (!info.width || !info.height || info.durationSeconds === null || !(info.durationSeconds > 0)) return null;
  const outputWidth = scaledWidth(info.width, info.height, targetHeight);
  return { frames: pricedFrames(info, method), inputPixels: info.width * info.height, outputWidth, outputPixels: outputWidth * targetHeight };
}

/** Sparks for a run of `work` on a video `seconds` long to `target` (1080p or 4k). */
export function upscaleSparks(work: UpscaleWork, seconds: number, target: string, method: UpscaleMethod): number {
  const name = target === '1080p' ? '1080p' : '4k';
  const per10 = PER_10_SECONDS[name]!;
  const ref = REFERENCE[name]!;
  const refPixels = ref.input[0] * ref.input[1] + ref.output[0] * ref.output[1];
  // Integers throughout (at most ~2 x 10^15): a multiple of the reference is exactly that many Sparks.
  const byFrames = Math.ceil((work.frames * (work.inputPixels + work.outputPixels) * per10) / (REFERENCE_FRAMES * refPixels));
  const lanczos = Math.max(Math.max(1, Math.ceil(seconds / 10)) * per10, byFrames);
  if (method === 'lanczos') return lanczos;
  return lanczos + Math.ceil((work.frames * work.inputPixels) / (LEARNED_FRAME_MP_PER_SPARK * 1_000_000));
}
