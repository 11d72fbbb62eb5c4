import { MAX_MEDIA_SECONDS } from '../../media/limits.js';
import { stringValue, video, type ToolManifest } from '../manifest.js';
import { DEFAULT_UPSCALE_METHOD, LEARNED_PRICE_FACTOR, UPSCALE_METHODS, UPSCALE_RUN_LIMIT_SECONDS, upscaleMethod, validateUpscale } from '../video/upscale-rules.js';

export const VIDEO_TARGETS = ['1080p', '4k'];

export const videoUpscale: ToolManifest = {
  id: 'video_upscale',
  name: 'Upscale video',
  description:
    'Upscales a video to 1080p or 4K, keeping its aspect ratio and audio. method lanczos (the default): Lanczos scaling, frame rate and timing kept. ' +
    'method learned: a small neural network trained to enlarge 2x sharpens the brightness of every frame (colour is enlarged smoothly), ' +
    'then Lanczos takes it to the target height when that is not exactly twice the input; finer detail, at a constant frame rate, ' +
    `many times slower and priced ${LEARNED_PRICE_FACTOR}x.`,
  family: 'enhance',
  outputKind: 'video',
  consent: 'none',
  productId: 'video_upscale',
  inputs: [
    { name: 'video', kind: 'video', required: true, min: 1, max: 1 },
    { name: 'target', kind: 'enum', required: false, min: 0, max: 1, choices: VIDEO_TARGETS, default: '1080p' },
    { name: 'method', kind: 'enum', required: false, min: 0, max: 1, choices: [...UPSCALE_METHODS], default: DEFAULT_UPSCALE_METHOD },
  ],
  plans: ['pro', 'team'],
  pipeline: false,
  // Per started 10 s of video: 2 Sparks to 1080p, 6 to 4K; learned LEARNED_PRICE_FACTOR times that (its CPU).
  price: (input) => {
    const seconds = input.media.video?.[0]?.durationSeconds ?? input.durationHint ?? 0;
    const per10 = stringValue(input, 'target', '1080p') === '4k' ? 6 : 2;
    const factor = upscaleMethod(input) === 'learned' ? LEARNED_PRICE_FACTOR : 1;
    return Math.max(1, Math.ceil(seconds / 10)) * per10 * factor;
  },
  // Up to 10 s to 1080p with Lanczos; the longest length uploads take, to 4K, learned.
  priceRange: {
    cheapest: { values: { target: '1080p', method: 'lanczos' }, media: { video: [video(1280, 720, 10)] }, durationHint: null },
    dearest: { values: { target: '4k', method: 'learned' }, media: { video: [video(1920, 1080, MAX_MEDIA_SECONDS)] }, durationHint: null },
  },
  validate: validateUpscale,
  // The ffmpeg wrappers load with the runner's module, on the first run.
  run: async (ctx) =>
    (await import('../video/upscale.js')).runUpscale(ctx, { threads: ctx.limits.ffmpegThreads, maxOutputBytes: ctx.limits.maxOutputBytes }),
  timeoutSeconds: UPSCALE_RUN_LIMIT_SECONDS,
};
