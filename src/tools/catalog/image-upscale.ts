import { DEFAULT_UPSCALE_METHOD, MAX_BYTES_PER_PIXEL, UPSCALE, UPSCALE_METHODS, upscaleSparks, validateUpscale } from '../image/upscale-rules.js';
import { image, type ToolManifest } from '../manifest.js';

export const MAX_OUTPUT_SIDE = UPSCALE.maxOutputSide;
export const MAX_OUTPUT_MEGAPIXELS = UPSCALE.maxOutputMegapixels;
/** A 16 MP input (the largest allowed) takes a few seconds with Lanczos3, ~15-25 s learned; this leaves room on a busy machine. */
const TIMEOUT_SECONDS = 300;

export const imageUpscale: ToolManifest = {
  id: 'image_upscale',
  name: 'Upscale image',
  description:
    'Doubles the width and height of an image, keeping its format and colour profile. method "learned" (the default) adds a small neural network\'s correction of the luma (trained for PSNR, run on CPU) to a centred Lanczos3 resample; "lanczos" is the Lanczos3 resample alone.',
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
      constraints: { scale: 2, max_output_side: MAX_OUTPUT_SIDE, max_output_megapixels: MAX_OUTPUT_MEGAPIXELS, max_bytes_per_pixel: MAX_BYTES_PER_PIXEL },
    },
    { name: 'method', kind: 'enum', required: false, min: 0, max: 1, choices: [...UPSCALE_METHODS], default: DEFAULT_UPSCALE_METHOD },
  ],
  plans: ['plus', 'pro', 'team'],
  pipeline: false,
  // 2 Sparks plus 1 per started 3 MB of decoded input pixels (a megapixel of 8-bit RGB).
  price: (input) => upscaleSparks(input.media.image?.[0]),
  // One grey pixel; the largest input whose output fits (16 MP in, 64 MP out), 16-bit RGBA.
  priceRange: {
    cheapest: { values: {}, media: { image: [{ ...image(1, 1), channels: 1, bitsPerSample: 8 }] }, durationHint: null },
    dearest: { values: {}, media: { image: [{ ...image(4000, 4000), channels: 4, bitsPerSample: 16 }] }, durationHint: null },
  },
  // Output at most 8192 px a side and 64 MP, from the probed (oriented) size; at most MAX_BYTES_PER_PIXEL decoded.
  validate: (input) => validateUpscale(input.media.image),
  // sharp loads with the runner's module, on the first run.
  run: async (ctx) => (await import('../image/upscale.js')).runUpscale(ctx, TIMEOUT_SECONDS),
  timeoutSeconds: TIMEOUT_SECONDS,
};
