import { serializeOuter, type DefaultTreeAdapterMap } from 'parse5';
import { attr, brandMarked, isBadge, isEmojiImage, isHomeLink, isMenuItem, mentionsLogo, platformOf, THIRD_PARTY_SECTION, type Parent } from './page-marks.js';

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
  /** img and inline_svg: the platform whose mark it is (named in its alt, title or file, or linked to), else null. */
  platform: string | null;
  /** img and inline_svg: under a heading over other parties' logos ("Used by", "Sponsors"), or one of a row of such logos. */
  thirdParty: boolean;
}

/** A place on the page that may name the site, with how much it counts (see name.ts). */
export interface NameSignal {
  kind: 'wordmark' | 'logo_text' | 'heading';
  text: string;
}

/** Where an element sits: what html.ts's walk knows about its ancestors. */
export interface Where {
  parent: Parent | null;
  inHeader: boolean;
  /** The nearest enclosing link to home (or brand-marked element), if any. */
  home: Element | null;
  /** The nearest enclosing link, if any. */
  link: Element | null;
  /** The enclosing h1 when it is the page's first or sits in the header: images in it are the brand's. */
  h1: Element | null;
}

const MAX_INLINE_SVGS = 6;
const MAX_MARKED = 24;
const MAX_NAME_SIGNALS = 20;
/** Logo-like images sharing a container, from this many on, are a row of other parties' logos. */
const WALL = 3;
const SVG_NS = 'http://www.w3.org/2000/svg';

export function absolute(url: string | null, base: string): string | null {
  if (!url?.trim()) return null;
  try {
    const u = new URL(url.trim(), base);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.toString() : null;
  } catch {
    return null;
  }
}

/** The text of an element; with alts, the alt text of its images in their place ("<img alt=Brand> on GitHub"). */
export function textOf(el: Element, alts = false): string {
  let out = '';
  const stack: Node[] = [...el.childNodes];
  while (stack.length) {
    const n = stack.shift()!;
    if (n.nodeName === '#text' && 'value' in n) out += n.value;
    else if (alts && 'tagName' in n && n.tagName === 'img') out += ` ${attr(n, 'alt') ?? ''} `;
    else if ('childNodes' in n) stack.unshift(...n.childNodes);
  }
  return out;
}

/** Whether an element holds an image or an SVG (looked for a few levels down). */
function holdsImage(el: Element): boolean {
  const stack: { n: Node; depth: number }[] = el.childNodes.map((n) => ({ n, depth: 0 }));
  for (let seen = 0; stack.length && seen < 200; seen++) {
    const { n, depth } = stack.pop()!;
    if (!('tagName' in n)) continue;
    if (n.tagName === 'img' || n.tagName === 'svg' || n.tagName === 'object') return true;
    if (depth < 3) stack.push(...n.childNodes.map((c) => ({ n: c, depth: depth + 1 })));
  }
  return false;
}

/** The file name of a URL, without its query (a badge's ?logo=github says nothing). */
const fileNameOf = (url: string) => decodeURIComponent(new URL(url).pathname.split('/').pop() ?? '');
const shortText = (t: string) => {
  const s = t.replace(/\s+/g, ' ').trim();
  return s && s.length <= 60 && s.split(' ').length <= 7 ? s : null;
};

/** An element and up to n of its nearest ancestors. */
function near(el: Element, parent: Parent | null, n: number): Element[] {
  const out = [el];
  for (let p = parent; p && out.length <= n; p = p.parent) out.push(p.el);
  return out;
}

function ancestors(parent: Parent | null, n: number): Element[] {
  const out: Element[] = [];
  for (let p = parent; p && out.length < n; p = p.parent) out.push(p.el);
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
 * Collects, element by element in document order, what names the site and what may be its logo:
 * images, <object>/<embed> SVGs and inline SVGs scored by their markup and place, with the
 * platform mark or other party's logo each may be; and the wordmarks, logo texts and first
 * heading that name the site.
 */
export class BrandCollector {
  readonly marked: LogoCandidate[] = [];
  readonly signals: NameSignal[] = [];
  private inlineSvgs = 0;
  private firstH1: Element | null = null;
  private headingSeen = false;
  private readonly homesNamed = new Set<Element>();
  /** Containers of headings over other parties' logos seen so far. */
  private readonly sponsorScopes = new Set<Element>();
  private readonly containers = new Map<LogoCandidate, Element[]>();
  private readonly inHome = new Set<LogoCandidate>();

  constructor(private readonly pageUrl: string) {}

  private signal(kind: NameSignal['kind'], text: string | null): void {
    const t = text ? shortText(text) : null;
    if (t && this.signals.length < MAX_NAME_SIGNALS) this.signals.push({ kind, text: t });
  }

  /** The h1 images in it would be the brand's: the page's first h1, or one in the header. */
  h1For(el: Element, inHeader: boolean): Element | null {
    if (el.tagName !== 'h1') return null;
    if (!this.firstH1) this.firstH1 = el;
    return this.firstH1 === el || inHeader ? el : null;
  }

  private add(c: LogoCandidate, where: Where): void {
    const scope = ancestors(where.parent, 6);
    if (!c.thirdParty && scope.some((a) => this.sponsorScopes.has(a))) c.thirdParty = true;
    this.marked.push(c);
    this.containers.set(c, ancestors(where.parent, 3));
    if (where.home) this.inHome.add(c);
    const linkHref = where.link ? absolute(attr(where.link, 'href'), this.pageUrl) : null;
    c.platform = platformOf(c.hint, linkHref !== null && new URL(linkHref).origin !== new URL(this.pageUrl).origin ? linkHref : null);
  }

  /** A logo in a link home or a heading names the site with its alt, and the link's text. */
  private named(c: LogoCandidate, holder: Element | null): void {
    if (c.score < 4 || c.platform || c.thirdParty) return;
    this.signal('logo_text', c.alt);
    if (holder && !this.homesNamed.has(holder)) {
      this.homesNamed.add(holder);
      this.signal('wordmark', textOf(holder));
    }
  }

  /** An image (img, or an SVG in <object data> or <embed src>) at this place. */
  image(el: Element, src: string | null, where: Where, baseUrl: string): void {
    const url = absolute(src, baseUrl);
    if (!url || isBadge(url) || isEmojiImage(el, url) || this.marked.length >= MAX_MARKED) return;
    const file = fileNameOf(url);
    const logoWord = /logo/i.test(file) || near(el, where.parent, 2).some(mentionsLogo);
    const score = (logoWord ? 5 : 0) + (where.home || where.h1 ? 4 : 0) + (where.inHeader ? 2 : 0);
    const alt = attr(el, 'alt') ?? attr(el, 'title') ?? attr(el, 'aria-label');
    const c: LogoCandidate = { kind: 'img', url, alt, svg: null, size: 0, score, hint: `${attr(el, 'alt') ?? ''} ${attr(el, 'title') ?? ''} ${file}`, platform: null, thirdParty: false };
    this.add(c, where);
    const parent = where.parent?.el ?? null;
    this.named(c, where.home ?? (parent && /^(h1|h2|a)$/.test(parent.tagName) ? parent : null));
  }

  /** An inline SVG; its contents are not walked. */
  svg(el: Element, where: Where): void {
    const titleEl = el.childNodes.find((c): c is Element => 'tagName' in c && c.tagName === 'title');
    const label = attr(el, 'aria-label') ?? (titleEl ? textOf(titleEl).trim() || null : null);
    const logoWord = near(el, where.parent, 3).some(mentionsLogo) || /logo/i.test(label ?? '');
    if (!(where.inHeader || where.home || where.h1 || logoWord) || this.inlineSvgs >= MAX_INLINE_SVGS) return;
    const svg = svgMarkup(el);
    if (!svg) return;
    this.inlineSvgs++;
    const score = (logoWord ? 5 : 0) + (where.home || where.h1 ? 4 : 0) + (where.inHeader ? 2 : 0);
    const linkLabel = where.link ? (attr(where.link, 'aria-label') ?? attr(where.link, 'title') ?? '') : '';
    const c: LogoCandidate = { kind: 'inline_svg', url: null, alt: label, svg, size: 0, score, hint: `${label ?? ''} ${linkLabel}`, platform: null, thirdParty: false };
    this.add(c, where);
    this.named(c, where.home);
  }

  /**
   * Any other element: an h1 names the site (as a wordmark in the header or a home link, else as
   * the first heading); a heading over other parties' logos opens their scope; a link home in the
   * header, or an element marked as the brand, gives its text as a wordmark unless it holds an
   * image (said with the logo) or is one item of a menu.
   */
  element(el: Element, tag: string, where: Where): void {
    if (tag === 'h1' && (where.inHeader || where.home)) this.signal('wordmark', textOf(el, true));
    else if (tag === 'h1' && !this.headingSeen) {
      this.headingSeen = true;
      this.signal('heading', textOf(el, true));
    }
    if (/^h[1-4]$/.test(tag) && THIRD_PARTY_SECTION.test(textOf(el))) for (const a of ancestors(where.parent, 3)) if (!/^(body|html|main)$/.test(a.tagName)) this.sponsorScopes.add(a);
    if (where.home !== null) return;
    const homeInHeader = tag === 'a' && where.inHeader && isHomeLink(el, this.pageUrl) && !isMenuItem(el, where.parent);
    if ((homeInHeader || brandMarked(el)) && !holdsImage(el)) this.signal('wordmark', textOf(el));
  }

  /**
   * Once the page is read: logo-like images that share a container with two or more others
   * (a row of customers' or sponsors' logos), outside any link home, are other parties' logos.
   */
  finish(): LogoCandidate[] {
    const logoLike = this.marked.filter((c) => c.kind === 'img' && c.score > 0 && !this.inHome.has(c));
    const members = new Map<Element, Set<string>>();
    for (const c of logoLike) for (const a of this.containers.get(c) ?? []) members.set(a, (members.get(a) ?? new Set()).add(c.url ?? ''));
    for (const c of logoLike) if ((this.containers.get(c) ?? []).some((a) => (members.get(a)?.size ?? 0) >= WALL)) c.thirdParty = true;
    return this.marked;
  }
}
