import { GRADE_MAX_MEGAPIXELS, validateGrade } from '../image/grade-rules.js';
import { image, megapixels, type ToolManifest, type ToolSlot } from '../manifest.js';

const slider = (name: string, minimum: number, maximum: number): ToolSlot => ({
  name,
  kind: 'number',
  required: false,
  min: 0,
  max: 1,
  constraints: { minimum, maximum },
  default: 0,
});

export const COLOR_PRESETS = ['natural', 'warm_film', 'cool_matte', 'bw_16mm', 'none'];
/** A 64 MP image grades in well under a minute; this leaves room on a busy machine. */
const TIMEOUT_SECONDS = 300;

export const imageColorGrade: ToolManifest = {
  id: 'image_color_grade',
  name: 'Colour grade',
  description:
    'Grades an image with a film look (natural, warm_film, cool_matte, bw_16mm) and temperature, contrast, saturation, exposure and grain sliders.',
  family: 'edit',
  outputKind: 'image',
  consent: 'none',
  productId: 'image_color_grade',
  inputs: [
    { name: 'image', kind: 'image', required: true, min: 1, max: 1, constraints: { max_megapixels: GRADE_MAX_MEGAPIXELS } },
    slider('temperature', -100, 100),
    slider('contrast', -100, 100),
    slider('saturation', -100, 100),
    slider('exposure', -3, 3),
    slider('grain', 0, 100),
    { name: 'preset', kind: 'enum', required: false, min: 0, max: 1, choices: COLOR_PRESETS, default: 'none' },
  ],
  plans: ['plus', 'pro', 'team'],
  pipeline: false,
  // 1 Spark plus 1 per started 4 megapixels.
  price: (input) => 1 + Math.ceil(megapixels(input.media.image?.[0]) / 4),
  // One pixel; the largest image validate() lets through (64 MP).
  priceRange: {
    cheapest: { values: {}, media: { image: [image(1, 1)] }, durationHint: null },
    dearest: { values: {}, media: { image: [image(8000, 8000)] }, durationHint: null },
  },
  validate: (input) => validateGrade(input.media.image),
  // sharp loads with the runner's module, on the first run.
  run: async (ctx) => (await import('../image/grade.js')).runGrade(ctx, TIMEOUT_SECONDS),
  timeoutSeconds: TIMEOUT_SECONDS,
};
