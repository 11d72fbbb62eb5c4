import { OutboundError } from '../../net/outbound.js';
import { ToolError } from '../manifest.js';
import { parseCss, parseStyleAttribute, type FontProvider, type ParsedCss, type StyleRule } from './css.js';
import { decodeText, pageError, statusOk, type Fetcher } from './fetch.js';
import { fontProvider, readPage, type PageFacts } from './html.js';

export interface SiteData {
  finalUrl: string;
  page: PageFacts;
  /** Every stylesheet read: linked and imported ones, then <style> blocks, then style attributes. */
  sheets: ParsedCss[];
  inlineRules: StyleRule[];
  sheetUrls: string[];
  /** Font service stylesheets: Google and Bunny read from their URL, Adobe from the fetched sheet. */
  services: { url: string; provider: FontProvider; families?: string[] }[];
  warnings: string[];
}

interface SheetRef {
  url: string;
  provider: FontProvider | null;
}

const MAX_IMPORT_DEPTH = 3;

/** The page itself: any failure here fails the run, with a message saying why. */
async function fetchPage(url: string, fetcher: Fetcher): Promise<{ finalUrl: string; html: string }> {
  let res;
  try {
    res = await fetcher.get(url, fetcher.limits.pageBytes, 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.1');
  } catch (err) {
    throw pageError(url, err, fetcher.limits);
  }
  if (!statusOk(res)) throw new ToolError(`The page ${url} answered HTTP ${res.status}.`);
  const type = String(res.headers['content-type'] ?? '').toLowerCase();
  if (type && !/text\/html|application\/xhtml\+xml/.test(type)) {
    throw new ToolError(`The url does not point at a web page: it answered with ${type.split(';')[0]}.`);
  }
  return { finalUrl: res.url, html: decodeText(res) };
}

/**
 * Fetches a page and its stylesheets (linked, then @imported, wave by wave, at most
 * limits.maxStylesheets) and parses them. A stylesheet that fails is a warning, not a failure.
 */
export async function loadSite(url: string, fetcher: Fetcher, progress: (f: number) => void): Promise<SiteData> {
  const { finalUrl, html } = await fetchPage(url, fetcher);
  progress(0.2);
  const page = readPage(html, finalUrl);
  const warnings: string[] = [];
  if (page.cutAtDepth) warnings.push(`the page nests elements more than ${page.cutAtDepth} deep: it was read up to that point`);
  const services: SiteData['services'] = page.fontServiceLinks.map((l) => ({ ...l }));
  const seen = new Set<string>();
  const fetched: { ref: SheetRef; css: ParsedCss }[] = [];
  const inlineSheets = page.styleBlocks.map((text) => parseCss(text, page.baseUrl));

  let wave: SheetRef[] = [];
  let done = 0;
  const enqueue = (ref: SheetRef, into: SheetRef[]) => {
    if (seen.has(ref.url) || !/^https?:/.test(ref.url)) return;
    const provider = fontProvider(ref.url);
    if (provider === 'google_fonts' || provider === 'bunny_fonts') {
      if (!services.some((s) => s.url === ref.url)) services.push({ url: ref.url, provider });
      return;
    }
    seen.add(ref.url);
    if (seen.size > fetcher.limits.maxStylesheets) {
      warnings.push(`more than ${fetcher.limits.maxStylesheets} stylesheets: ${ref.url} was not read`);
      return;
    }
    into.push({ url: ref.url, provider: ref.provider ?? provider });
  };
  for (const ref of page.stylesheets) enqueue(ref, wave);
  for (const sheet of inlineSheets) for (const imp of sheet.imports) enqueue({ url: imp, provider: null }, wave);

  for (let depth = 0; wave.length && depth <= MAX_IMPORT_DEPTH; depth++) {
    const results = await Promise.all(
      wave.map(async (ref) => {
        try {
          const res = await fetcher.get(ref.url, fetcher.limits.stylesheetBytes, 'text/css,*/*;q=0.1');
          if (!statusOk(res)) throw new Error(`HTTP ${res.status}`);
          if (/html|^image\//i.test(String(res.headers['content-type'] ?? ''))) throw new Error('not a stylesheet');
          return { ref, css: parseCss(decodeText(res), res.url, ref.provider) };
        } catch (err) {
          if (err instanceof OutboundError && err.code === 'url_not_public') warnings.push(`stylesheet ${ref.url}: not public`);
          else warnings.push(`stylesheet ${ref.url}: ${err instanceof Error ? err.message : 'failed'}`);
          return null;
        } finally {
          done++;
          progress(0.2 + 0.3 * Math.min(1, done / Math.max(1, Math.min(seen.size, fetcher.limits.maxStylesheets))));
        }
      }),
    );
    const next: SheetRef[] = [];
    for (const r of results) {
      if (!r) continue;
      fetched.push(r);
      for (const imp of r.css.imports) enqueue({ url: imp, provider: null }, next);
    }
    wave = depth < MAX_IMPORT_DEPTH ? next : [];
  }
  for (const { ref, css } of fetched) {
    if (ref.provider === 'adobe_fonts') services.push({ url: ref.url, provider: 'adobe_fonts', families: [...new Set(css.fontFaces.map((f) => f.family))] });
  }
  const inlineRules = page.styleAttributes.map(parseStyleAttribute).filter((r): r is StyleRule => r !== null);
  return {
    finalUrl,
    page,
    sheets: [...fetched.map((f) => f.css), ...inlineSheets],
    inlineRules,
    sheetUrls: fetched.map((f) => f.ref.url),
    services,
    warnings,
  };
}
