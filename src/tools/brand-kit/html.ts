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
  logos: LogoCandidate[];
  /** Set when the page nested elements too deeply and was read only up to that point. */
  cutAtDepth: number | null;
}

const MAX_STYLE_ATTRIBUTES = 2000;
const MAX_INLINE_SVGS = 3;
const MAX_LOGO_CANDIDATES = 20;
const SVG_NS = 'http://www.w3.org/2000/svg';

export function attr(el: Element, name: string): string | null {
  return el.attrs.find((a) => a.name === name)?.value ?? null;
}

function textOf(el: Element): string {
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
    logos: [],
    cutAtDepth: bounded.cut ? MAX_NESTING : null,
  };
  const marked: LogoCandidate[] = [];
  const icons: LogoCandidate[] = [];
  let inlineSvgs = 0;
  let baseSeen = false;
  // Depth-first in document order, iterative (pages may nest deeply), each entry linked to its
  // parent element and knowing whether it is inside the page header.
  const stack: Frame[] = [{ node: doc, parent: null, inHeader: false }];
  while (stack.length) {
    const frame = stack.pop()!;
    const { node, parent, inHeader } = frame;
    if (!('tagName' in node)) {
      if ('childNodes' in node) for (let i = node.childNodes.length - 1; i >= 0; i--) stack.push({ node: node.childNodes[i]!, parent, inHeader });
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
        else facts.stylesheets.push({ url: href, provider });
      } else if (href && (rel.includes('apple-touch-icon') || rel.includes('apple-touch-icon-precomposed'))) {
        icons.push({ kind: 'apple_touch_icon', url: href, alt: null, svg: null, size: sizeOf(attr(el, 'sizes')) || 180 * 180 });
      } else if (href && (rel.includes('icon') || rel.includes('mask-icon'))) {
        icons.push({ kind: 'icon', url: href, alt: null, svg: null, size: sizeOf(attr(el, 'sizes')) });
      }
    } else if (tag === 'style') {
      if (!/print/i.test(attr(el, 'media') ?? '')) facts.styleBlocks.push(textOf(el));
    } else if (tag === 'img') {
      const src = attr(el, 'src') ?? attr(el, 'data-src');
      if (/logo/i.test(src ?? '') || near(el, parent, 2).some(mentionsLogo)) {
        const url = absolute(src, facts.baseUrl);
        if (url) marked.push({ kind: 'img', url, alt: attr(el, 'alt'), svg: null, size: 0 });
      }
    } else if (tag === 'svg' && el.namespaceURI === SVG_NS) {
      if ((inHeader || near(el, parent, 3).some(mentionsLogo)) && inlineSvgs < MAX_INLINE_SVGS) {
        const titleEl = el.childNodes.find((c): c is Element => 'tagName' in c && c.tagName === 'title');
        const label = attr(el, 'aria-label') ?? (titleEl ? textOf(titleEl).trim() || null : null);
        const svg = svgMarkup(el);
        if (svg) {
          inlineSvgs++;
          marked.push({ kind: 'inline_svg', url: null, alt: label, svg, size: 0 });
        }
      }
      continue; // nothing inside an SVG is a page element we read
    }
    if (tag === 'template' || tag === 'script' || tag === 'noscript') continue;
    const children = el.childNodes;
    const self: Parent = { el, parent };
    const header = inHeader || tag === 'header' || attr(el, 'role') === 'banner';
    for (let i = children.length - 1; i >= 0; i--) stack.push({ node: children[i]!, parent: self, inHeader: header });
  }
  icons.sort((a, b) => (a.kind === b.kind ? b.size - a.size : a.kind === 'apple_touch_icon' ? -1 : 1));
  const og = absolute(facts.metas.get('og:image:secure_url') ?? facts.metas.get('og:image') ?? null, facts.baseUrl);
  const all = [...marked, ...icons, ...(og ? [{ kind: 'og_image' as const, url: og, alt: facts.metas.get('og:image:alt') ?? null, svg: null, size: 0 }] : [])];
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
