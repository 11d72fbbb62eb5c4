import { MAX_MEDIA_SECONDS } from '../../media/limits.js';
import { stringValue, video, type ToolManifest } from '../manifest.js';
import { UPSCALE_TIMEOUT_SECONDS, validateUpscale } from '../video/upscale-rules.js';

export const VIDEO_TARGETS = ['1080p', '4k'];

export const videoUpscale: ToolManifest = {
  id: 'video_upscale',
  name: 'Upscale video',
  description: 'Upscales a video to 1080p or 4K with Lanczos scaling, keeping its aspect ratio, frame rate and audio.',
  family: 'enhance',
  outputKind: 'video',
  consent: 'none',
  productId: 'video_upscale',
  inputs: [
    { name: 'video', kind: 'video', required: true, min: 1, max: 1 },
    { name: 'target', kind: 'enum', required: false, min: 0, max: 1, choices: VIDEO_TARGETS, default: '1080p' },
  ],
  plans: ['pro', 'team'],
  pipeline: false,
  // Per started 10 s of video: 2 Sparks to 1080p, 6 to 4K.
  price: (input) => {
    const seconds = input.media.video?.[0]?.durationSeconds ?? input.durationHint ?? 0;
    const per10 = stringValue(input, 'target', '1080p') === '4k' ? 6 : 2;
    return Math.max(1, Math.ceil(seconds / 10)) * per10;
  },
  // Up to 10 s to 1080p; the longest length uploads take, to 4K.
  priceRange: {
    cheapest: { values: { target: '1080p' }, media: { video: [video(1280, 720, 10)] }, durationHint: null },
    dearest: { values: { target: '4k' }, media: { video: [video(1920, 1080, MAX_MEDIA_SECONDS)] }, durationHint: null },
  },
  validate: validateUpscale,
  // The ffmpeg wrappers load with the runner's module, on the first run.
  run: async (ctx) =>
    (await import('../video/upscale.js')).runUpscale(ctx, { threads: ctx.limits.ffmpegThreads, maxOutputBytes: ctx.limits.maxOutputBytes }),
  timeoutSeconds: UPSCALE_TIMEOUT_SECONDS,
};
