import fs from 'node:fs/promises';
import path from 'node:path';
import type { ToolOutput } from '../manifest.js';
import { statusOk, type Fetcher } from './fetch.js';
import type { LogoCandidate } from './html.js';
import { decodeLogo } from './images.js';
import type { KitLogo } from './schema.js';

export const MAX_LOGO_OUTPUTS = 5;
const MAX_SVG_MARKUP = 64 * 1024;

/**
 * Turns logo candidates into kit entries and output files: inline SVGs from their markup, the rest
 * fetched (bounded by the fetcher) and kept only when sharp decodes them. At most
 * MAX_LOGO_OUTPUTS files, named logo-1.png and so on in the order of the candidates.
 */
export async function collectLogos(
  candidates: LogoCandidate[],
  fetcher: Fetcher,
  workDir: string,
  warnings: string[],
  progress: (f: number) => void,
): Promise<{ logos: KitLogo[]; outputs: ToolOutput[] }> {
  const logos: KitLogo[] = [];
  const outputs: ToolOutput[] = [];
  let fetches = 0;
  for (const [i, c] of candidates.entries()) {
    const logo: KitLogo = {
      kind: c.kind,
      url: c.url,
      alt: c.alt,
      file: null,
      mime_type: null,
      width: null,
      height: null,
      source_format: null,
      svg: c.svg && c.svg.length <= MAX_SVG_MARKUP ? c.svg : null,
    };
    logos.push(logo);
    if (outputs.length >= MAX_LOGO_OUTPUTS) continue;
    let bytes: Buffer | null = null;
    if (c.svg !== null) {
      bytes = Buffer.from(c.svg, 'utf8');
      if (bytes.length > fetcher.limits.logoBytes) {
        warnings.push(`inline SVG logo ${i + 1}: larger than ${fetcher.limits.logoBytes} bytes`);
        bytes = null;
      }
    } else if (c.url && fetches < fetcher.limits.maxLogoFetches && fetcher.remainingMs() > 0) {
      fetches++;
      try {
        const res = await fetcher.get(c.url, fetcher.limits.logoBytes, 'image/*,*/*;q=0.1');
        if (statusOk(res)) bytes = res.body;
        else warnings.push(`logo ${c.url}: HTTP ${res.status}`);
      } catch (err) {
        warnings.push(`logo ${c.url}: ${err instanceof Error ? err.message : 'failed'}`);
      }
    }
    if (bytes) {
      const image = await decodeLogo(bytes);
      if (!image) {
        warnings.push(`logo ${c.url ?? `inline SVG ${i + 1}`}: not a decodable image`);
      } else {
        const fileName = `logo-${outputs.length + 1}.${image.ext}`;
        const file = path.join(workDir, fileName);
        await fs.writeFile(file, image.bytes);
        outputs.push({ path: file, fileName, mimeType: image.mimeType });
        Object.assign(logo, { file: fileName, mime_type: image.mimeType, width: image.width, height: image.height, source_format: image.sourceFormat });
      }
    }
    progress((i + 1) / candidates.length);
  }
  return { logos, outputs };
}
