import { MAX_MEDIA_SECONDS } from '../../media/limits.js';
import { video, type ToolManifest } from '../manifest.js';
import { TRANSITION_STYLES, TRANSITION_TIMEOUT_SECONDS, validateTransition } from '../video/transition-rules.js';

export { TRANSITION_STYLES };

export const videoTransition: ToolManifest = {
  id: 'video_transition',
  name: 'Video transition',
  description: 'Joins 2 to 10 clips in order with a fade, dissolve or wipe between each, into one MP4 (H.264 + AAC).',
  family: 'edit',
  outputKind: 'video',
  consent: 'none',
  productId: 'video_transition',
  inputs: [
    { name: 'clips', kind: 'video', required: true, min: 2, max: 10 },
    { name: 'style', kind: 'enum', required: false, min: 0, max: 1, choices: TRANSITION_STYLES, default: 'fade' },
    {
      name: 'duration_seconds',
      kind: 'number',
      required: false,
      min: 0,
      max: 1,
      constraints: { minimum: 0.1, maximum: 5 },
      default: 1,
    },
  ],
  plans: ['plus', 'pro', 'team'],
  pipeline: false,
  // 2 Sparks per clip plus 1 per started 10 s of input.
  price: (input) => {
    const clips = input.media.clips ?? [];
    const seconds = clips.reduce((sum, c) => sum + (c.durationSeconds ?? 0), 0) || (input.durationHint ?? 0);
    return Math.max(1, 2 * Math.max(clips.length, 2) + Math.ceil(seconds / 10));
  },
  // Two clips whose length the probe could not tell; ten clips of the longest length uploads take.
  priceRange: {
    cheapest: { values: {}, media: { clips: [video(1280, 720, null), video(1280, 720, null)] }, durationHint: null },
    dearest: { values: {}, media: { clips: Array.from({ length: 10 }, () => video(1920, 1080, MAX_MEDIA_SECONDS)) }, durationHint: null },
  },
  validate: validateTransition,
  // The ffmpeg wrappers load with the runner's module, on the first run.
  run: async (ctx) =>
    (await import('../video/transition.js')).runTransition(ctx, { threads: ctx.limits.ffmpegThreads, maxOutputBytes: ctx.limits.maxOutputBytes }),
  timeoutSeconds: TRANSITION_TIMEOUT_SECONDS,
};
