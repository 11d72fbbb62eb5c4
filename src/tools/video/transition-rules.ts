import type { FieldError } from '../../core/errors.js';
import { numberValue, type PricingInput } from '../manifest.js';
import { shortSeconds, type TransitionStyle } from './transition-graph.js';

/**
 * video_transition's styles, defaults and input check: what the API needs for pricing and
 * validation, without the ffmpeg wrappers (the runner in transition.ts loads them on the first run).
 */

export const TRANSITION_STYLES: TransitionStyle[] = ['fade', 'dissolve', 'wipe_left', 'wipe_right'];
export const TRANSITION_TIMEOUT_SECONDS = 1800;
export const DEFAULT_DURATION = 1;

export function isStyle(s: string): s is TransitionStyle {
  return (TRANSITION_STYLES as string[]).includes(s);
}

/** duration_seconds must be shorter than every clip, by the lengths the upload probe found. */
export function validateTransition(input: PricingInput): FieldError[] {
  const clips = input.media.clips ?? [];
  const d = numberValue(input, 'duration_seconds', DEFAULT_DURATION);
  const i = clips.findIndex((c) => c.durationSeconds !== null && !(d < c.durationSeconds));
  if (i < 0) return [];
  return [
    {
      loc: ['body', 'inputs', 'duration_seconds'],
      message: `must be shorter than every clip; clip ${i + 1} is ${shortSeconds(clips[i]!.durationSeconds ?? 0)} s long`,
      code: 'longer_than_clip',
    },
  ];
}
