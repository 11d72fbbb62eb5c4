import { MAX_FRAME_RATE, MAX_MEDIA_SECONDS } from '../../media/limits.js';
import { stringValue, video, type MediaInfo, type PricingInput, type ToolManifest } from '../manifest.js';
import { hintClip, learnedMinutesAt540p, TARGET_HEIGHTS, UPSCALE_METHODS, UPSCALE_RUN_LIMIT_SECONDS, upscaleMethod, validateUpscale } from '../video/upscale-rules.js';
import { LEARNED_FRAME_MP_PER_SPARK, PER_10_SECONDS, upscaleSparks, upscaleWork } from '../video/upscale-work.js';

export const VIDEO_TARGETS = ['1080p', '4k'];

/** The dearest video uploads allow and video_upscale takes: 4 h at 240 fps, frames as wide as 1080p output may be. */
const DEAREST: MediaInfo = { ...video(32706, 1078, MAX_MEDIA_SECONDS), frameRate: MAX_FRAME_RATE, frames: MAX_FRAME_RATE * MAX_MEDIA_SECONDS };

function upscalePrice(input: PricingInput): number {
  const target = stringValue(input, 'target', '1080p');
  const method = upscaleMethod(input);
  const height = TARGET_HEIGHTS[target] ?? 1080;
  // No file yet: duration_seconds prices a clip of that length as HINT_CLIP describes; the file prices the run.
  const file = input.media.video?.[0] ?? hintClip(input.durationHint ?? 0, target);
  const work = upscaleWork(file, height, method);
  // A row without a size or length: its run fails before any work ("upload it again").
  if (!work) return PER_10_SECONDS[target] ?? 2;
  return upscaleSparks(work, file.durationSeconds ?? 0, target, method);
}

export const videoUpscale: ToolManifest = {
  id: 'video_upscale',
  name: 'Upscale video',
  description:
    'Upscales a video to 1080p or 4K, keeping its aspect ratio and audio. method learned: a small neural network trained to enlarge 2x ' +
    'sharpens the brightness of every frame (colour is enlarged smoothly), then Lanczos takes it to the target height when that is not ' +
    'exactly twice the input; finer detail, at a constant frame rate, several times the CPU, and priced by its work: ' +
    `1 Spark more per started ${LEARNED_FRAME_MP_PER_SPARK} megapixels of input frames. method lanczos: Lanczos scaling, frame rate and ` +
    'timing kept, the cheapest. Left out, method is learned, or lanczos for a video longer than the learned path takes in a run ' +
    `(about ${learnedMinutesAt540p()} minutes of 960x540 at 25 fps to 1080p); the estimate prices the one the run will use. ` +
    'Priced from the uploaded file (its frames and their size); duration_seconds alone prices a clip of that length at 30 fps ' +
    'in the target\'s reference size (1280x720 to 1080p, 1920x1080 to 4K); more frames or larger ones cost more.',
  family: 'enhance',
  outputKind: 'video',
  consent: 'none',
  productId: 'video_upscale',
  inputs: [
    { name: 'video', kind: 'video', required: true, min: 1, max: 1 },
    { name: 'target', kind: 'enum', required: false, min: 0, max: 1, choices: VIDEO_TARGETS, default: '1080p' },
    // No fixed default: left out, the video decides (upscale-rules.ts defaultMethod, the description says how).
    { name: 'method', kind: 'enum', required: false, min: 0, max: 1, choices: [...UPSCALE_METHODS] },
  ],
  plans: ['pro', 'team'],
  pipeline: false,
  // By its frames and their size (docs/prices.md; src/tools/video/upscale-work.ts).
  price: upscalePrice,
  // Up to 10 s of 30 fps to 1080p with Lanczos; the most frames uploads take (4 h at 240 fps), each
  // as wide as a frame out may be (32766 x 1080), with Lanczos to 1080p: learned is refused long
  // before (its time limit), and 4K's output pixels cost less a Spark.
  priceRange: {
    cheapest: { values: { target: '1080p', method: 'lanczos' }, media: { video: [{ ...video(1280, 720, 10), frameRate: 30, frames: 300 }] }, durationHint: null },
    dearest: { values: { target: '1080p', method: 'lanczos' }, media: { video: [DEAREST] }, durationHint: null },
  },
  validate: validateUpscale,
  // The ffmpeg wrappers load with the runner's module, on the first run.
  run: async (ctx) =>
    (await import('../video/upscale.js')).runUpscale(ctx, { threads: ctx.limits.ffmpegThreads, maxOutputBytes: ctx.limits.maxOutputBytes }),
  timeoutSeconds: UPSCALE_RUN_LIMIT_SECONDS,
};
