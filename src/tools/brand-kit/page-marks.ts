import type { DefaultTreeAdapterMap } from 'parse5';

/**
 * What the markup around an element says about it, for html.ts: whether it is the page's header
 * or navigation, a link home, a menu item, a badge or an emoji, whether an image is another
 * party's mark (a platform the site links to, a wall of customers' or sponsors' logos).
 */

type Element = DefaultTreeAdapterMap['element'];

export interface Parent {
  el: Element;
  parent: Parent | null;
}

export function attr(el: Element, name: string): string | null {
  return el.attrs.find((a) => a.name === name)?.value ?? null;
}

export const mentionsLogo = (el: Element) => ['class', 'id', 'aria-label', 'alt', 'title'].some((a) => /logo/i.test(attr(el, a) ?? ''));
export const BRAND_CLASS = /(^|[\s_-])(brand|logo|site-?title|site-?name|wordmark)([\s_-]|$)/i;
/** Marked as the brand by class or id. */
export const brandMarked = (el: Element) => BRAND_CLASS.test(attr(el, 'class') ?? '') || BRAND_CLASS.test(attr(el, 'id') ?? '');

/** Navigation and page headers by tag, role or a conventional id/class (div#nav, .navbar, .masthead). */
export const isNavLike = (el: Element, tag: string) =>
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

/** Fragments that mean "the top of this page", not a section of it. */
const TOP_FRAGMENT = /^#(top|page-top|home|hero|header|site-top)?$/i;

/**
 * A link to the site's home, or one marked as the brand: where a logo sits. A link to a section
 * of the page (#features) is navigation, not home.
 */
export function isHomeLink(el: Element, pageUrl: string): boolean {
  if (brandMarked(el)) return true;
  const href = (attr(el, 'href') ?? '').trim();
  if (/^(\/|\.\/|index\.html?|\.\/index\.html?)$/i.test(href) || TOP_FRAGMENT.test(href)) return true;
  try {
    const u = new URL(href, pageUrl);
    return u.origin === new URL(pageUrl).origin && (u.pathname === '/' || /^\/index\.html?$/i.test(u.pathname)) && !u.search && TOP_FRAGMENT.test(u.hash || '#');
  } catch {
    return false;
  }
}

const elementChildren = (el: Element): Element[] => el.childNodes.filter((c): c is Element => 'tagName' in c);

/**
 * One entry of a menu: a link in a list item whose list has other items, unless the link or its
 * item is marked as the brand (a navbar's first item is sometimes the wordmark).
 */
export function isMenuItem(el: Element, parent: Parent | null): boolean {
  if (brandMarked(el)) return false;
  for (let p = parent, up = 0; p && up < 3; p = p.parent, up++) {
    if (p.el.tagName !== 'li') continue;
    if (brandMarked(p.el)) return false;
    const list = p.parent?.el;
    return !!list && elementChildren(list).filter((c) => c.tagName === 'li').length >= 2;
  }
  return false;
}

/** Emoji drawn as images (Twemoji and the like): never a logo. */
export function isEmojiImage(el: Element, url: string): boolean {
  if (/(^|\s)(emoji|emoticon|smiley|wp-smiley)(\s|$)/i.test(attr(el, 'class') ?? '')) return true;
  const alt = (attr(el, 'alt') ?? '').trim();
  if (alt && /^[\p{Extended_Pictographic}\p{Emoji_Component}\u200d\ufe0f\s]+$/u.test(alt) && !/^[\d#*\s]+$/.test(alt)) return true;
  const file = decodeURIComponent(new URL(url).pathname.split('/').pop() ?? '');
  return /^(emoji[_-]?)?(u\+?)?1f[0-9a-f]{3}([_-][0-9a-f]{4,5})*\.(svg|png)$/i.test(file) || /\/emoji(s)?\//i.test(new URL(url).pathname);
}

/**
 * Platforms whose marks sites put beside their own: code hosting, social networks, chat, package
 * registries, app stores. An image named after one of them, or linking to one, is that
 * platform's mark ("Source code on GitHub", "Follow us"), not the site's logo. The list names
 * kinds of service a site links out to, never a site whose kit is being read: a site whose own
 * name is the platform's keeps its mark (see logos.ts).
 */
const PLATFORM_WORDS = [
  'github', 'gitlab', 'bitbucket', 'sourceforge', 'codeberg', 'twitter', 'facebook', 'instagram', 'linkedin', 'youtube', 'vimeo',
  'discord', 'slack', 'gitter', 'reddit', 'mastodon', 'npm', 'npmjs', 'pypi', 'stackoverflow', 'stack overflow', 'stack-overflow',
  'codepen', 'dribbble', 'behance', 'pinterest', 'tiktok', 'telegram', 'whatsapp', 'patreon', 'opencollective', 'open collective',
  'app store', 'app-store', 'appstore', 'google play', 'google-play', 'googleplay', 'rss',
];
const PLATFORM_TEXT = new RegExp(`(^|[^a-z0-9])(${PLATFORM_WORDS.map((w) => w.replace(/[ -]/g, '[ _-]?')).join('|')})([^a-z0-9]|$)`, 'i');
const PLATFORM_HOST = /(^|\.)(github\.com|gitlab\.com|bitbucket\.org|sourceforge\.net|codeberg\.org|twitter\.com|x\.com|facebook\.com|instagram\.com|linkedin\.com|youtube\.com|youtu\.be|vimeo\.com|discord\.(gg|com)|slack\.com|gitter\.im|reddit\.com|medium\.com|npmjs\.(com|org)|pypi\.org|stackoverflow\.com|codepen\.io|dribbble\.com|behance\.net|pinterest\.com|tiktok\.com|t\.me|patreon\.com|opencollective\.com|apps\.apple\.com|play\.google\.com)$/i;

/** The platform an image's alt, title or file name names, or its link points at (lower case), or null. */
export function platformOf(text: string, link: string | null): string | null {
  const m = PLATFORM_TEXT.exec(text);
  if (m) return m[2]!.toLowerCase().replace(/[^a-z]/g, '');
  if (!link) return null;
  try {
    const host = new URL(link).hostname.toLowerCase();
    return PLATFORM_HOST.test(host) ? host.replace(/^www\./, '').split('.')[0]! : null;
  } catch {
    return null;
  }
}

/** Headings over other parties' logos: customers, sponsors, press. */
export const THIRD_PARTY_SECTION = /\b(used by|who uses|who's using|trusted by|loved by|sponsor(s|ed by)?|backers?|partners?|customers?|clients?|supporters?|featured (in|on)|as seen (in|on)|in the press|powered by|companies using|users include)\b/i;
