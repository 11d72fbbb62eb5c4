import { parse, serializeOuter, type DefaultTreeAdapterMap } from 'parse5';
import type { FontProvider } from './css.js';
import { limitNesting, MAX_NESTING } from './nesting.js';
import { absolute, BrandCollector, textOf, type LogoCandidate, type NameSignal, type Where } from './brand-marks.js';
import { attr, brandMarked, isHomeLink, isNavLike, type Parent } from './page-marks.js';

export { attr, isBadge } from './page-marks.js';
export { textOf, type LogoCandidate, type LogoKind, type NameSignal } from './brand-marks.js';

type Node = DefaultTreeAdapterMap['node'];
type Element = DefaultTreeAdapterMap['element'];

export interface StylesheetRef {
  url: string;
  provider: FontProvider | null;
}

export interface PageFacts {
  baseUrl: string;
  title: string | null;
  metas: Map<string, string>;
  themeColors: string[];
  stylesheets: StylesheetRef[];
  /** Font service stylesheets that are read from their URL, not fetched. */
  fontServiceLinks: { url: string; provider: FontProvider }[];
  styleBlocks: string[];
  styleAttributes: string[];
  /** Linked stylesheets (url) and <style> blocks (index into styleBlocks) in document order: the cascade's order. */
  styleOrder: ({ url: string } | { block: number })[];
  /** Marked logo images and inline SVGs (ranked later, once the name is known), then icons, then og:image. */
  logos: LogoCandidate[];
  nameSignals: NameSignal[];
  /** The parsed page, for the cascade (cascade.ts). */
  document: DefaultTreeAdapterMap['document'];
  manifestUrl: string | null;
  /** Set when the page nested elements too deeply and was read only up to that point. */
  cutAtDepth: number | null;
}

const MAX_STYLE_ATTRIBUTES = 2000;
const MAX_LOGO_CANDIDATES = 30;
const SVG_NS = 'http://www.w3.org/2000/svg';

/** Which font service a stylesheet URL belongs to, if any. */
export function fontProvider(url: string): FontProvider | null {
  const host = new URL(url).hostname.toLowerCase();
  if (host === 'fonts.googleapis.com') return 'google_fonts';
  if (host === 'fonts.bunny.net') return 'bunny_fonts';
  if (host === 'use.typekit.net' || host === 'use.typekit.com' || host === 'p.typekit.net') return 'adobe_fonts';
  return null;
}

/** Google and Bunny put the families in the query: family=A:wght@400&family=B (css2) or family=A|B:400 (css). */
export function familiesInFontUrl(url: string): string[] {
  const out: string[] = [];
  for (const spec of new URL(url).searchParams.getAll('family')) {
    for (const part of spec.split('|')) {
      const name = part.split(':')[0]?.trim();
      if (name) out.push(name);
    }
  }
  return out;
}

function sizeOf(sizes: string | null): number {
  const m = /(\d+)x(\d+)/i.exec(sizes ?? '');
  return m ? Number(m[1]) * Number(m[2]) : 0;
}

const iconCandidate = (kind: LogoCandidate['kind'], url: string, size: number, alt: string | null = null): LogoCandidate =>
  ({ kind, url, alt, svg: null, size, score: 0, hint: '', platform: null, thirdParty: false });

interface Frame extends Where {
  node: Node;
}

/**
 * Reads what a brand kit needs from a page with parse5 (the WHATWG parsing algorithm, so broken
 * markup is read the way browsers read it): title, meta tags, stylesheets (linked and inline),
 * style attributes, icons and logo candidates.
 */
export function readPage(html: string, pageUrl: string): PageFacts {
  const bounded = limitNesting(html);
  const doc = parse(bounded.html);
  const facts: PageFacts = {
    baseUrl: pageUrl,
    title: null,
    metas: new Map(),
    themeColors: [],
    stylesheets: [],
    fontServiceLinks: [],
    styleBlocks: [],
    styleAttributes: [],
    styleOrder: [],
    logos: [],
    nameSignals: [],
    document: doc,
    manifestUrl: null,
    cutAtDepth: bounded.cut ? MAX_NESTING : null,
  };
  const icons: LogoCandidate[] = [];
  const brand = new BrandCollector(pageUrl);
  let baseSeen = false;
  // Depth-first in document order, iterative (pages may nest deeply), each entry linked to its
  // parent element, knowing whether it is inside the page header or navigation, a home link, a link, an h1.
  const stack: Frame[] = [{ node: doc, parent: null, inHeader: false, home: null, link: null, h1: null }];
  while (stack.length) {
    const frame = stack.pop()!;
    const { node, parent, inHeader, home } = frame;
    if (!('tagName' in node)) {
      if ('childNodes' in node) for (let i = node.childNodes.length - 1; i >= 0; i--) stack.push({ ...frame, node: node.childNodes[i]! });
      continue;
    }
    const el = node;
    const tag = el.tagName.toLowerCase();
    const h1 = brand.h1For(el, inHeader) ?? frame.h1;
    const style = attr(el, 'style');
    if (style && facts.styleAttributes.length < MAX_STYLE_ATTRIBUTES) facts.styleAttributes.push(style);
    if (tag === 'base' && !baseSeen) {
      baseSeen = true;
      facts.baseUrl = absolute(attr(el, 'href'), pageUrl) ?? pageUrl;
    } else if (tag === 'title' && facts.title === null && el.namespaceURI !== SVG_NS) {
      facts.title = textOf(el);
    } else if (tag === 'meta') {
      const key = (attr(el, 'property') ?? attr(el, 'name') ?? '').toLowerCase().trim();
      const content = attr(el, 'content');
      if (key && content !== null) {
        if (key === 'theme-color') {
          // A light-scheme or unconditional colour first; a dark-scheme one only as a last resort.
          if (/dark/i.test(attr(el, 'media') ?? '')) facts.themeColors.push(content);
          else facts.themeColors.unshift(content);
        } else if (!facts.metas.has(key)) facts.metas.set(key, content);
      }
    } else if (tag === 'link') {
      const rel = (attr(el, 'rel') ?? '').toLowerCase().split(/\s+/).filter(Boolean);
      const href = absolute(attr(el, 'href'), facts.baseUrl);
      if (href && rel.includes('stylesheet') && !rel.includes('alternate')) {
        const provider = fontProvider(href);
        if (provider === 'google_fonts' || provider === 'bunny_fonts') facts.fontServiceLinks.push({ url: href, provider });
        else {
          facts.stylesheets.push({ url: href, provider });
          facts.styleOrder.push({ url: href });
        }
      } else if (href && (rel.includes('apple-touch-icon') || rel.includes('apple-touch-icon-precomposed'))) {
        icons.push(iconCandidate('apple_touch_icon', href, sizeOf(attr(el, 'sizes')) || 180 * 180));
      } else if (href && (rel.includes('icon') || rel.includes('mask-icon'))) {
        icons.push(iconCandidate('icon', href, sizeOf(attr(el, 'sizes'))));
      } else if (href && rel.includes('manifest') && !facts.manifestUrl) {
        facts.manifestUrl = href;
      }
    } else if (tag === 'style') {
      if (!/print/i.test(attr(el, 'media') ?? '')) {
        facts.styleOrder.push({ block: facts.styleBlocks.length });
        facts.styleBlocks.push(textOf(el));
      }
    } else if (tag === 'img') {
      brand.image(el, attr(el, 'src') ?? attr(el, 'data-src'), frame, facts.baseUrl);
    } else if ((tag === 'object' && /svg|image/i.test(`${attr(el, 'type') ?? ''} ${attr(el, 'data') ?? ''}`)) || (tag === 'embed' && /\.svg/i.test(attr(el, 'src') ?? ''))) {
      brand.image(el, attr(el, 'data') ?? attr(el, 'src'), frame, facts.baseUrl);
    } else if (tag === 'svg' && el.namespaceURI === SVG_NS) {
      brand.svg(el, frame);
      continue; // nothing inside an SVG is a page element we read
    } else {
      brand.element(el, tag, frame);
    }
    if (tag === 'template' || tag === 'script' || tag === 'noscript') continue;
    const children = el.childNodes;
    const self: Parent = { el, parent };
    const header = inHeader || isNavLike(el, tag);
    const homeHere = home ?? (tag === 'a' || brandMarked(el) ? (isHomeLink(el, pageUrl) ? el : null) : null);
    const link = tag === 'a' ? el : frame.link;
    for (let i = children.length - 1; i >= 0; i--) stack.push({ node: children[i]!, parent: self, inHeader: header, home: homeHere, link, h1 });
  }
  icons.sort((a, b) => (a.kind === b.kind ? b.size - a.size : a.kind === 'apple_touch_icon' ? -1 : 1));
  const og = absolute(facts.metas.get('og:image:secure_url') ?? facts.metas.get('og:image') ?? null, facts.baseUrl);
  facts.nameSignals = brand.signals;
  const all: LogoCandidate[] = [...brand.finish(), ...icons, ...(og ? [iconCandidate('og_image', og, 0, facts.metas.get('og:image:alt') ?? null)] : [])];
  const seen = new Set<string>();
  facts.logos = all
    .filter((c) => {
      const key = c.url ?? c.svg ?? '';
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    })
    .slice(0, MAX_LOGO_CANDIDATES);
  return facts;
}

/** Between a title's parts: a dash, bar, bullet or colon with spaces around, or a colon after a word ("Name: tagline"). */
export const SEPARATORS = /\s+[|\u2013\u2014\u00b7:\u2022»-]\s+|(?<=[^\s:]):\s+/;
/** Words that name a page of a site, not the site. */
export const PAGE_WORDS =
  /^(home|homepage|home page|welcome|index|start|official site|official website|usage|introduction|intro|getting started|get started|installation|install|overview|api|api reference|reference|guide|guides|examples?|tutorials?|faq|about|about us|blog|news|downloads?|features|pricing|contact|contact us|changelog|change log|release notes|releases|quick ?start|setup|configuration|license|team|community|support|search|log ?in|sign ?in|sign ?up|docs|documentation|menu|logo|404|not found|page not found)$/i;

/**
 * A site name from a <title>: titles are often "Page | Site", "Site - Tagline" or "Site: Tagline".
 * The part that matches the host name wins; otherwise the first part unless it names a page
 * ("Home", "Usage"), else the next that does not.
 */
export function cleanTitle(title: string, hostname: string): string | null {
  const t = title.replace(/\s+/g, ' ').trim();
  if (!t) return null;
  const parts = t.split(SEPARATORS).map((p) => p.trim()).filter(Boolean);
  if (parts.length <= 1) return t;
  const host = hostname.toLowerCase().replace(/^www\./, '').replace(/[^a-z0-9]/g, '');
  const byHost = parts.find((p) => {
    const flat = p.toLowerCase().replace(/[^a-z0-9]/g, '');
    return flat.length >= 3 && host.includes(flat);
  });
  if (byHost) return byHost;
  const first = parts[0]!;
  return PAGE_WORDS.test(first) ? (parts.slice(1).find((p) => !PAGE_WORDS.test(p)) ?? null) : first;
}
