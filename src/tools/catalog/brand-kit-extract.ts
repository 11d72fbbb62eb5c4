import { validateBrandKitInputs } from '../brand-kit/rules.js';
import { image, type ToolManifest } from '../manifest.js';

export const brandKitExtract: ToolManifest = {
  id: 'brand_kit_extract',
  name: 'Extract brand kit',
  description:
    "Extracts a brand kit (name, colour palette with roles, fonts, logos) from a web page and/or images, as one JSON file plus the logos found.",
  family: 'analyze',
  outputKind: 'json',
  consent: 'none',
  productId: 'brand_kit_extract',
  inputs: [
    { name: 'url', kind: 'text', required: false, min: 0, max: 1, constraints: { max_length: 2048, schemes: ['http', 'https'] } },
    { name: 'files', kind: 'image', required: false, min: 0, max: 10 },
    { name: 'save', kind: 'bool', required: false, min: 0, max: 1, default: false },
  ],
  plans: ['plus', 'pro', 'team'],
  pipeline: false,
  // 5 Sparks for a page, 1 per image.
  price: (input) => (typeof input.values.url === 'string' ? 5 : 0) + (input.media.files?.length ?? 0) || 1,
  // One image and no page; a page and ten images.
  priceRange: {
    cheapest: { values: {}, media: { files: [image(1, 1)] }, durationHint: null },
    dearest: { values: { url: 'https://example.com' }, media: { files: Array.from({ length: 10 }, () => image(1, 1)) }, durationHint: null },
  },
  validate: validateBrandKitInputs,
  // The page parsers (css-tree, parse5) and sharp load with the runner's module, on the first run.
  run: async (ctx) => (await import('../brand-kit/run.js')).createBrandKitRunner()(ctx),
  // Fetching is bounded at 20 s in all; the rest is parsing and small image work.
  timeoutSeconds: 60,
  onSucceeded: async (tx, run, outputs) => (await import('../brand-kit/run.js')).saveBrandKitOnSuccess(tx, run, outputs),
};
