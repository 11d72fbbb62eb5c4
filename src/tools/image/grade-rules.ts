import type { FieldError } from '../../core/errors.js';
import type { MediaInfo } from '../manifest.js';

/**
 * image_color_grade's pixel limit and input check: what the API needs for pricing and
 * validation, without sharp (the runner in grade.ts loads it on the first run).
 */

export const GRADE_MAX_MEGAPIXELS = 64;
export const GRADE_MAX_PIXELS = GRADE_MAX_MEGAPIXELS * 1_000_000;

/** The manifest's validate(): a 422 on the image slot past the pixel limit. */
export function validateGrade(media: MediaInfo[] | undefined): FieldError[] {
  const m = media?.[0];
  if (!m || m.width === null || m.height === null || m.width * m.height <= GRADE_MAX_PIXELS) return [];
  const mp = ((m.width * m.height) / 1_000_000).toFixed(1);
  return [
    {
      loc: ['body', 'inputs', 'image'],
      message: `the image is ${m.width} x ${m.height} px (${mp} MP); image_color_grade takes at most ${GRADE_MAX_MEGAPIXELS} megapixels`,
      code: 'too_large',
    },
  ];
}
