import { image, megapixels, type ToolManifest } from '../manifest.js';

export const MAX_OUTPUT_SIDE = 8192;
export const MAX_OUTPUT_MEGAPIXELS = 64;

export const imageUpscale: ToolManifest = {
  id: 'image_upscale',
  name: 'Upscale image',
  description: 'Doubles the width and height of an image with Lanczos resampling and a light sharpen, keeping its format and colour profile.',
  family: 'enhance',
  outputKind: 'image',
  consent: 'none',
  productId: 'image_upscale',
  inputs: [
    {
      name: 'image',
      kind: 'image',
      required: true,
      min: 1,
      max: 1,
      constraints: { scale: 2, max_output_side: MAX_OUTPUT_SIDE, max_output_megapixels: MAX_OUTPUT_MEGAPIXELS },
    },
  ],
  plans: ['plus', 'pro', 'team'],
  pipeline: false,
  // 2 Sparks plus 1 per started input megapixel.
  price: (input) => 2 + Math.ceil(megapixels(input.media.image?.[0])),
  hintCases: {
    min: { values: {}, media: { image: [image(1024, 768)] }, durationHint: null },
    max: { values: {}, media: { image: [image(4096, 4096)] }, durationHint: null },
  },
};
