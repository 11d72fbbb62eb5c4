import { DEFAULT_UPSCALE_METHOD, DEFAULT_UPSCALE_SCALE, MAX_BYTES_PER_PIXEL, UPSCALE, UPSCALE_METHODS, upscaleScale, upscaleSparks, validateUpscale } from '../image/upscale-rules.js';
import { image, type ToolManifest } from '../manifest.js';

export const MAX_OUTPUT_SIDE = UPSCALE.maxOutputSide;
export const MAX_OUTPUT_MEGAPIXELS = UPSCALE.maxOutputMegapixels;
/** A 64 MP output (the largest allowed) takes a few seconds with Lanczos3, ~15-25 s learned at 2x; this leaves room on a busy machine. */
const TIMEOUT_SECONDS = 300;

export const imageUpscale: ToolManifest = {
  id: 'image_upscale',
  name: 'Upscale image',
  description:
    'Enlarges the width and height of an image 2x (scale 2, the default) or 4x (scale 4), keeping its format and colour profile. ' +
    'method "learned" (the default) adds a small neural network\'s correction of the luma (trained for PSNR at each scale, run on CPU) to a centred Lanczos3 resample; "lanczos" is the Lanczos3 resample alone. ' +
    'Priced by the output: 2 Sparks plus 1 per started 4 megapixels out (of 8-bit RGB; more bytes a pixel count more).',
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
      constraints: { max_output_side: MAX_OUTPUT_SIDE, max_output_megapixels: MAX_OUTPUT_MEGAPIXELS, max_bytes_per_pixel: MAX_BYTES_PER_PIXEL },
    },
    { name: 'method', kind: 'enum', required: false, min: 0, max: 1, choices: [...UPSCALE_METHODS], default: DEFAULT_UPSCALE_METHOD },
    // 2 or 4: a number (the factor), its two values as a range with a step, which HTML number fields and the check both read.
    { name: 'scale', kind: 'number', required: false, min: 0, max: 1, constraints: { minimum: 2, maximum: 4, step: 2 }, default: DEFAULT_UPSCALE_SCALE },
  ],
  plans: ['plus', 'pro', 'team'],
  pipeline: false,
  // 2 Sparks plus 1 per started 12 MB of decoded output pixels (four megapixels of 8-bit RGB).
  price: (input) => upscaleSparks(input.media.image?.[0], upscaleScale(input.values)),
  // One grey pixel at 2x; the largest output allowed (64 MP: 16 MP in at 2x), 16-bit RGBA.
  priceRange: {
    cheapest: { values: {}, media: { image: [{ ...image(1, 1), channels: 1, bitsPerSample: 8 }] }, durationHint: null },
    dearest: { values: {}, media: { image: [{ ...image(4000, 4000), channels: 4, bitsPerSample: 16 }] }, durationHint: null },
  },
  // Output at most 8192 px a side and 64 MP, from the probed (oriented) size and the scale; at most MAX_BYTES_PER_PIXEL decoded.
  validate: (input) => validateUpscale(input.media.image, upscaleScale(input.values)),
  // sharp loads with the runner's module, on the first run.
  run: async (ctx) => (await import('../image/upscale.js')).runUpscale(ctx, TIMEOUT_SECONDS),
  timeoutSeconds: TIMEOUT_SECONDS,
};
