/**
 * Luma measures over decoded video frames for bench/video-learned.ts: PSNR against the original
 * frames, and two kinds of temporal flicker (issue 38 item 3).
 *
 * - Static flicker: the mean absolute difference between consecutive output frames of a scene
 *   that does not move. Whatever changes frame to frame there is flicker the upscaler (or the
 *   encoder) made out of the input's own frame-to-frame noise.
 * - Pan flicker: the same consecutive difference taken against the truth's, i.e. the mean over
 *   frames of |(out[t] - out[t-1]) - (truth[t] - truth[t-1])|: motion the original has is not
 *   flicker, and only what departs from it counts.
 * Both leave a border out (the edges of a resampled frame are guesses either way).
 */

/** Luma planes, one Buffer of w x h bytes per frame. */
export type LumaFrames = Buffer[];

export function lumaPsnr(a: Buffer, b: Buffer, w: number, h: number, border: number): number {
  let se = 0;
  let n = 0;
  for (let y = border; y < h - border; y++) {
    for (let x = border; x < w - border; x++) {
      const d = a[y * w + x]! - b[y * w + x]!;
      se += d * d;
      n++;
    }
  }
  return 10 * Math.log10((255 * 255 * n) / Math.max(se, 1e-9));
}

/** Mean luma PSNR of `frames` against `truth`, frame by frame; the counts must agree. */
export function meanPsnr(frames: LumaFrames, truth: LumaFrames, w: number, h: number, border: number): number {
  if (frames.length !== truth.length) throw new Error(`${frames.length} frames, the original has ${truth.length}`);
  return frames.reduce((a, fr, i) => a + lumaPsnr(fr, truth[i]!, w, h, border), 0) / frames.length;
}

/** The mean of `diff(t, i)` over every consecutive pair (t - 1, t) of `count` frames and every pixel i inside the border. */
function meanOverPairs(count: number, w: number, h: number, border: number, diff: (t: number, i: number) => number): number {
  if (count < 2) throw new Error('flicker needs at least two frames');
  let sum = 0;
  let n = 0;
  for (let t = 1; t < count; t++) {
    for (let y = border; y < h - border; y++) {
      for (let x = border; x < w - border; x++) {
        sum += diff(t, y * w + x);
        n++;
      }
    }
  }
  return sum / n;
}

/** Mean absolute difference between consecutive frames (grey levels), over every pair. */
export function staticFlicker(frames: LumaFrames, w: number, h: number, border: number): number {
  return meanOverPairs(frames.length, w, h, border, (t, i) => Math.abs(frames[t]![i]! - frames[t - 1]![i]!));
}

/** Mean |(out[t] - out[t-1]) - (truth[t] - truth[t-1])| (grey levels), over every pair. */
export function panFlicker(frames: LumaFrames, truth: LumaFrames, w: number, h: number, border: number): number {
  if (frames.length !== truth.length) throw new Error(`${frames.length} frames, the original has ${truth.length}`);
  return meanOverPairs(frames.length, w, h, border, (t, i) => Math.abs(frames[t]![i]! - frames[t - 1]![i]! - (truth[t]![i]! - truth[t - 1]![i]!)));
}
