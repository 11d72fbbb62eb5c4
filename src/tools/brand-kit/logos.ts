import fs from 'node:fs/promises';
import path from 'node:path';
import type { ToolOutput } from '../manifest.js';
import { statusOk, type Fetcher } from './fetch.js';
import type { LogoCandidate } from './html.js';
import { decodeLogo } from './images.js';
import type { KitLogo } from './schema.js';

export const MAX_LOGO_OUTPUTS = 5;
/**
 * A page image is a logo from this score up (see html.ts: "logo" in its markup 5, in a home link
 * 4, in the header or navigation 2; named after the site 3 more); an inline SVG from 2, in the
 * header or navigation alone (an image there with nothing else for it is more often a photo or a
 * menu icon, an SVG drawn into the header more often the mark).
 */
const LOGO_SCORE = { img: 3, inline_svg: 2 };
const MAX_RANKED = 20;

const flat = (t: string) => t.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, '');

/**
 * Page images and inline SVGs ranked by how much their place and markup say "logo", plus 3 when
 * their alt, title or file name holds the site's name; those under LOGO_SCORE are dropped, and so
 * are other parties' marks: a platform's (unless the site is named after it) and logos under a
 * "Used by" or "Sponsors" heading or in a row of such logos (unless named after the site). Ties
 * keep page order (the top of the page first). Icons and og:image follow, as read.
 */
export function rankLogos(candidates: LogoCandidate[], siteName: string | null): LogoCandidate[] {
  const name = siteName ? flat(siteName) : '';
  const onPage: { c: LogoCandidate; score: number; i: number }[] = [];
  const rest: LogoCandidate[] = [];
  candidates.forEach((c, i) => {
    if (c.kind !== 'img' && c.kind !== 'inline_svg') {
      rest.push(c);
      return;
    }
    const named = name.length >= 3 && flat(c.hint).includes(name);
    if (c.platform && !name.includes(c.platform)) return;
    if (c.thirdParty && !named) return;
    const score = c.score + (named ? 3 : 0);
    if (score >= LOGO_SCORE[c.kind]) onPage.push({ c, score, i });
  });
  onPage.sort((a, b) => b.score - a.score || a.i - b.i);
  return [...onPage.map((x) => x.c), ...rest].slice(0, MAX_RANKED);
}
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
