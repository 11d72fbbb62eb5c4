import type { FieldError } from '../../core/errors.js';
import type { PricingInput } from '../manifest.js';

/**
 * brand_kit_extract's input check and output name: what the API needs, without the page
 * parsers (css-tree, parse5) and sharp that the runner in run.ts loads on the first run.
 */

export const KIT_FILE = 'brand-kit.json';

/** At least one source: a url or some images (the per-slot checks have run already). */
export function validateBrandKitInputs(input: PricingInput): FieldError[] {
  const hasUrl = typeof input.values.url === 'string' && input.values.url.length > 0;
  const hasFiles = (input.media.files?.length ?? 0) > 0;
  if (hasUrl || hasFiles) return [];
  return [{ loc: ['body', 'inputs', 'url'], message: 'a url or files (at least one image) is needed', code: 'missing_source' }];
}
