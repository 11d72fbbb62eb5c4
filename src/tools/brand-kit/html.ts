import { parse, serializeOuter, type DefaultTreeAdapterMap } from 'parse5';
import type { FontProvider } from './css.js';
import { limitNesting, MAX_NESTING } from './nesting.js';

type Node = DefaultTreeAdapterMap['node'];
type Element = DefaultTreeAdapterMap['element'];

export type LogoKind = 'inline_svg' | 'img' | 'apple_touch_icon' | 'icon' | 'og_image';

export interface LogoCandidate {
  kind: LogoKind;
  /** Absolute URL; null for an inline SVG. */
  url: string | null;
  alt: string | null;
  /** The markup of an inline SVG. */
  svg: string | null;
  /** From a sizes="WxH" attribute, to prefer the largest icon. */
  size: number;
  /** img and inline_svg: how much the markup and position say "logo" (see logoScore). */
  score: number;
  /** img and inline_svg: alt, title and file name, to find the site's name in. */
  hint: string;
}

/** A place on the page that may name the site, with how much it counts (see name.ts). */
export interface NameSignal {
  kind: 'wordmark' | 'logo_text' | 'heading';
  text: string;
}

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
const MAX_INLINE_SVGS = 6;
const MAX_MARKED = 24;
const MAX_LOGO_CANDIDATES = 30;
const MAX_NAME_SIGNALS = 20;
const SVG_NS = 'http://www.w3.org/2000/svg';

export function attr(el: Element, name: string): string | null {
  return el.attrs.find((a) => a.name === name)?.value ?? null;
}

export function textOf(el: Element): string {
  let out = '';
  const stack: Node[] = [...el.childNodes];
  while (stack.length) {
    const n = stack.shift()!;
    if (n.nodeName === '#text' && 'value' in n) out += n.value;
    else if ('childNodes' in n) stack.unshift(...n.childNodes);
  }
  return out;
}

function absolute(url: string | null, base: string): string | null {
  if (!url?.trim()) return null;
  try {
    const u = new URL(url.trim(), base);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.toString() : null;
  } catch {
    return null;
  }
}

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

const mentionsLogo = (el: Element) => ['class', 'id', 'aria-label', 'alt', 'title'].some((a) => /logo/i.test(attr(el, a) ?? ''));
const BRAND_CLASS = /(^|[\s_-])(brand|logo|site-?title|site-?name|wordmark)([\s_-]|$)/i;
/** Navigation and page headers by tag, role or a conventional id/class (div#nav, .navbar, .masthead). */
const isNavLike = (el: Element, tag: string) =>
  tag === 'header' || tag === 'nav' || ['banner', 'navigation'].includes(attr(el, 'role') ?? '') ||
  /^(nav|navbar|header|masthead|topbar|top-bar|site-header|site-nav)$/i.test(attr(el, 'id') ?? '') ||
  (attr(el, 'class') ?? '').split(/\s+/).some((c) => /^(nav|navbar|header|masthead|topbar|site-header|site-nav)$/i.test(c));

/** Badges (build status, stars, versions) are images of text, not a logo, whatever their URL says. */
export function isBadge(url: string): boolean {
  try {
    const u = new URL(url);
    return /(^|\.)(shields\.io|badgen\.net|badge\.fury\.io|travis-ci\.(org|com)|circleci\.com|codecov\.io|coveralls\.io|badges\.gitter\.im|david-dm\.org|snyk\.io|app\.netlify\.com)$/i.test(u.hostname) ||
      /(^|[/_.-])badges?([/_.-]|$)/i.test(u.pathname);
  } catch {
    return false;
  }
}

/** A link to the site's home, or one marked as the brand: where a logo sits. */
function isHomeLink(el: Element, pageUrl: string): boolean {
  if (BRAND_CLASS.test(attr(el, 'class') ?? '') || BRAND_CLASS.test(attr(el, 'id') ?? '')) return true;
  const href = (attr(el, 'href') ?? '').trim();
  if (/^(\/|\.\/|#|#top|#page-top|index\.html?|\.\/index\.html?)$/i.test(href)) return true;
  try {
    const u = new URL(href, pageUrl);
    return u.origin === new URL(pageUrl).origin && (u.pathname === '/' || /^\/index\.html?$/i.test(u.pathname)) && !u.search;
  } catch {
    return false;
  }
}

/** The file name of a URL, without its query (a badge's ?logo=github says nothing). */
const fileNameOf = (url: string) => decodeURIComponent(new URL(url).pathname.split('/').pop() ?? '');
const shortText = (t: string) => {
  const s = t.replace(/\s+/g, ' ').trim();
  return s && s.length <= 60 && s.split(' ').length <= 7 ? s : null;
};

function sizeOf(sizes: string | null): number {
  const m = /(\d+)x(\d+)/i.exec(sizes ?? '');
  return m ? Number(m[1]) * Number(m[2]) : 0;
}

interface Parent {
  el: Element;
  parent: Parent | null;
}

interface Frame {
  node: Node;
  parent: Parent | null;
  inHeader: boolean;
  /** The nearest enclosing link to home (or brand-marked element), if any. */
  home: Element | null;
}

/** An element and up to n of its nearest ancestors. */
function near(el: Element, parent: Parent | null, n: number): Element[] {
  const out = [el];
  for (let p = parent; p && out.length <= n; p = p.parent) out.push(p.el);
  return out;
}

/** An inline SVG as a standalone document (namespace declared, as an .svg file needs). */
function svgMarkup(el: Element): string | null {
  let markup: string;
  try {
    markup = serializeOuter(el);
  } catch {
    return null; // nested too deeply to print: not a logo anyone drew
  }
  if (!attr(el, 'xmlns')) markup = markup.replace(/^<svg/i, `<svg xmlns="${SVG_NS}"`);
  if (/\sxlink:/i.test(markup) && !attr(el, 'xmlns:xlink')) markup = markup.replace(/^<svg/i, '<svg xmlns:xlink="http://www.w3.org/1999/xlink"');
  return markup;
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
  const marked: LogoCandidate[] = [];
  const icons: LogoCandidate[] = [];
  const signal = (kind: NameSignal['kind'], text: string | null) => {
    const t = text ? shortText(text) : null;
    if (t && facts.nameSignals.length < MAX_NAME_SIGNALS) facts.nameSignals.push({ kind, text: t });
  };
  let inlineSvgs = 0;
  let baseSeen = false;
  let firstH1 = true;
  const homesNamed = new Set<Element>();
  // Depth-first in document order, iterative (pages may nest deeply), each entry linked to its
  // parent element, knowing whether it is inside the page header or navigation and inside a home link.
  const stack: Frame[] = [{ node: doc, parent: null, inHeader: false, home: null }];
  while (stack.length) {
    const frame = stack.pop()!;
    const { node, parent, inHeader, home } = frame;
    if (!('tagName' in node)) {
      if ('childNodes' in node) for (let i = node.childNodes.length - 1; i >= 0; i--) stack.push({ node: node.childNodes[i]!, parent, inHeader, home });
      continue;
    }
    const el = node;
    const tag = el.tagName.toLowerCase();
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
        icons.push({ kind: 'apple_touch_icon', url: href, alt: null, svg: null, size: sizeOf(attr(el, 'sizes')) || 180 * 180, score: 0, hint: '' });
      } else if (href && (rel.includes('icon') || rel.includes('mask-icon'))) {
        icons.push({ kind: 'icon', url: href, alt: null, svg: null, size: sizeOf(attr(el, 'sizes')), score: 0, hint: '' });
      } else if (href && rel.includes('manifest') && !facts.manifestUrl) {
        facts.manifestUrl = href;
      }
    } else if (tag === 'style') {
      if (!/print/i.test(attr(el, 'media') ?? '')) {
        facts.styleOrder.push({ block: facts.styleBlocks.length });
        facts.styleBlocks.push(textOf(el));
      }
    } else if (tag === 'img') {
      const url = absolute(attr(el, 'src') ?? attr(el, 'data-src'), facts.baseUrl);
      if (url && !isBadge(url) && marked.length < MAX_MARKED) {
        const file = fileNameOf(url);
        const logoWord = /logo/i.test(file) || near(el, parent, 2).some(mentionsLogo);
        const score = (logoWord ? 5 : 0) + (home ? 4 : 0) + (inHeader ? 2 : 0);
        const alt = attr(el, 'alt');
        marked.push({ kind: 'img', url, alt, svg: null, size: 0, score, hint: `${alt ?? ''} ${attr(el, 'title') ?? ''} ${file}` });
        if (score >= 4) signal('logo_text', alt);
        const holder = home ?? (parent && /^(h1|h2|a)$/.test(parent.el.tagName) ? parent.el : null);
        if (score >= 4 && holder && !homesNamed.has(holder)) {
          homesNamed.add(holder);
          signal('wordmark', textOf(holder));
        }
      }
    } else if (tag === 'svg' && el.namespaceURI === SVG_NS) {
      const titleEl = el.childNodes.find((c): c is Element => 'tagName' in c && c.tagName === 'title');
      const label = attr(el, 'aria-label') ?? (titleEl ? textOf(titleEl).trim() || null : null);
      const logoWord = near(el, parent, 3).some(mentionsLogo) || /logo/i.test(label ?? '');
      if ((inHeader || home || logoWord) && inlineSvgs < MAX_INLINE_SVGS) {
        const svg = svgMarkup(el);
        if (svg) {
          inlineSvgs++;
          const score = (logoWord ? 5 : 0) + (home ? 4 : 0) + (inHeader ? 2 : 0);
          marked.push({ kind: 'inline_svg', url: null, alt: label, svg, size: 0, score, hint: `${label ?? ''} ${home ? (attr(home, 'aria-label') ?? '') : ''}` });
          if (score >= 4) signal('logo_text', label);
          if (score >= 4 && home && !homesNamed.has(home)) {
            homesNamed.add(home);
            signal('wordmark', textOf(home));
          }
        }
      }
      continue; // nothing inside an SVG is a page element we read
    } else if (tag === 'h1' && (inHeader || home)) {
      signal('wordmark', textOf(el));
    } else if (tag === 'h1' && firstH1) {
      firstH1 = false;
      signal('heading', textOf(el));
    }
    if (tag === 'template' || tag === 'script' || tag === 'noscript') continue;
    if (home === null && (tag === 'a' || (inHeader && BRAND_CLASS.test(attr(el, 'class') ?? ''))) && isHomeLink(el, pageUrl) && (inHeader || BRAND_CLASS.test(attr(el, 'class') ?? ''))) {
      // The brand link's own text (a wordmark), unless it holds a logo image (said with the logo).
      if (!el.childNodes.some((c) => 'tagName' in c && (c.tagName === 'img' || c.tagName === 'svg'))) signal('wordmark', textOf(el));
    }
    const children = el.childNodes;
    const self: Parent = { el, parent };
    const header = inHeader || isNavLike(el, tag);
    const homeHere = home ?? (tag === 'a' || BRAND_CLASS.test(attr(el, 'class') ?? '') ? (isHomeLink(el, pageUrl) ? el : null) : null);
    for (let i = children.length - 1; i >= 0; i--) stack.push({ node: children[i]!, parent: self, inHeader: header, home: homeHere });
  }
  icons.sort((a, b) => (a.kind === b.kind ? b.size - a.size : a.kind === 'apple_touch_icon' ? -1 : 1));
  const og = absolute(facts.metas.get('og:image:secure_url') ?? facts.metas.get('og:image') ?? null, facts.baseUrl);
  const all = [...marked, ...icons, ...(og ? [{ kind: 'og_image' as const, url: og, alt: facts.metas.get('og:image:alt') ?? null, svg: null, size: 0, score: 0, hint: '' }] : [])];
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

const SEPARATORS = /\s+[|\u2013\u2014\u00b7:\u2022»-]\s+/;
const GENERIC = /^(home|homepage|home page|welcome|index|start|official site|official website)$/i;

/**
 * A site name from a <title>: titles are often "Page | Site" or "Site - Tagline". The part that
 * matches the host name wins; otherwise the first part unless it is generic ("Home"), else the last.
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
  return GENERIC.test(first) ? parts[parts.length - 1]! : first;
}
