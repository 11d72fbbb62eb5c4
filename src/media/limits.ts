/**
 * Bounds on uploaded media that pricing and the tool catalog need too. Kept apart from probe.ts
 * so the API's tool metadata loads without sharp, file-type or the ffprobe wrappers.
 */

/** 8192 x 4320 (DCI 8K): every real camera format fits, and a frame decodes in about 50 MB. */
export const MAX_VIDEO_PIXELS = 8192 * 4320;
/** Four hours: longer than any clip the video tools can work through within their time limits. */
export const MAX_MEDIA_SECONDS = 4 * 3600;
/** 240 frames a second: phones' slow-motion capture, the fastest real footage. */
export const MAX_FRAME_RATE = 240;

/**
 * The rate a run's ffmpeg works a video stream at (probeVideo): its average rate (`avg_frame_rate`,
 * "num/den") when that is a rate of at most MAX_FRAME_RATE, else its base rate (`r_frame_rate`)
 * under the same rule, else none. The upload probe records the same, so that a price is reckoned
 * at the rate the work will be done at.
 */
export function workingFrameRate(average: string | undefined, base: string | undefined): { num: number; den: number } | null {
  const fraction = (r: string | undefined) => {
    const [num, den] = (r ?? '').split('/').map(Number);
    return num && den && num > 0 && den > 0 && num / den <= MAX_FRAME_RATE ? { num, den } : null;
  };
  return fraction(average) ?? fraction(base);
}
