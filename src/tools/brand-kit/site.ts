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
  /** The style rules in cascade order: linked sheets and <style> blocks as the page orders them, each @import before its importer. */
  cascadeRules: StyleRule[];
  manifest: { name: string | null; shortName: string | null } | null;
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
const MANIFEST_BYTES = 64 * 1024;

/** The web app manifest's names; anything wrong with it means no names, not a failed run. */
async function fetchManifest(url: string | null, fetcher: Fetcher): Promise<SiteData['manifest']> {
  if (!url) return null;
  try {
    const res = await fetcher.get(url, MANIFEST_BYTES, 'application/manifest+json,application/json;q=0.9,*/*;q=0.1');
    if (!statusOk(res)) return null;
    const json: unknown = JSON.parse(decodeText(res));
    if (typeof json !== 'object' || json === null) return null;
    const str = (v: unknown) => (typeof v === 'string' && v.trim() ? v.trim() : null);
    const m = json as Record<string, unknown>;
    return { name: str(m.name), shortName: str(m.short_name) };
  } catch {
    return null;
  }
}

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
  let cssBytes = 0;
  const manifest = fetchManifest(page.manifestUrl, fetcher);
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
          const left = fetcher.limits.stylesheetTotalBytes - cssBytes;
          if (left <= 0) throw new Error(`the ${fetcher.limits.stylesheetTotalBytes} bytes for all stylesheets were spent`);
          const res = await fetcher.get(ref.url, Math.min(fetcher.limits.stylesheetBytes, left), 'text/css,*/*;q=0.1');
          cssBytes += res.body.length;
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
  const byUrl = new Map(fetched.map((f) => [f.ref.url, f.css]));
  const cascadeRules: StyleRule[] = [];
  const emitted = new Set<string>();
  const emit = (css: ParsedCss, depth: number) => {
    for (const imp of css.imports) {
      const sheet = byUrl.get(imp);
      if (sheet && !emitted.has(imp) && depth <= MAX_IMPORT_DEPTH) {
        emitted.add(imp);
        emit(sheet, depth + 1);
      }
    }
    for (const rule of css.rules) cascadeRules.push(rule);
  };
  for (const entry of page.styleOrder) {
    if ('block' in entry) {
      const sheet = inlineSheets[entry.block];
      if (sheet) emit(sheet, 0);
    } else if (!emitted.has(entry.url)) {
      const sheet = byUrl.get(entry.url);
      emitted.add(entry.url);
      if (sheet) emit(sheet, 0);
    }
  }
  return {
    finalUrl,
    page,
    cascadeRules,
    manifest: await manifest,
    sheets: [...fetched.map((f) => f.css), ...inlineSheets],
    inlineRules,
    sheetUrls: fetched.map((f) => f.ref.url),
    services,
    warnings,
  };
}
