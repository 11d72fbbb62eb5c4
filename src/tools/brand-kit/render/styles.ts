/** Computed styles of one element of the rendered page, as the browser resolved the cascade. */
export interface RenderedElementStyle {
  /** The computed font-family list, quotes removed, in order. */
  fontFamily: string[];
  /** Computed colour as sRGB #rrggbb; null when half-transparent or less. */
  color: string | null;
  /** Computed background-color as sRGB #rrggbb; null when half-transparent or less (none set). */
  background: string | null;
}

/**
 * What the render mode hands the analysis besides the rendered HTML: the styles the browser
 * computed for the elements whose look a brand sets. Elements are the first visible ones
 * (display, size, visibility, opacity).
 */
export interface RenderedStyles {
  /** <body>; its background is <html>'s when the body's own is transparent. */
  body: RenderedElementStyle | null;
  h1: RenderedElementStyle | null;
  h2: RenderedElementStyle | null;
  h3: RenderedElementStyle | null;
  /** Buttons and button-like links (button, [role=button], submit inputs, .btn, .button), at most 8. */
  buttons: RenderedElementStyle[];
  /** Links in the content (outside header, nav and footer when there are such), at most 12. */
  links: RenderedElementStyle[];
  /** header, [role=banner] and nav, at most 3. */
  header: RenderedElementStyle[];
}

/** The largest amount of script-inserted CSS (CSSOM rules with no text in the page) carried over. */
export const MAX_CSSOM_CHARS = 1024 * 1024;
/** Elements looked at for one selector: a page of a million hidden links is not read to its end. */
const MAX_LOOKED = 2000;

/**
 * Evaluated in the page, in an isolated world of the reader's own (read.ts): the page's scripts
 * share its DOM but not its globals, so they cannot change what String.prototype.match or
 * getComputedStyle answer here. A string, so nothing the TypeScript build adds leaks into the
 * page. Every answer is bounded here, before it crosses to the service: at most 20 families of
 * 200 characters per element, MAX_CSSOM_CHARS of CSS, MAX_LOOKED elements per selector.
 * Colours go through a 1x1 canvas, which turns every colour syntax the browser knows (oklch,
 * color(display-p3 ...), lab) into sRGB bytes. Also returns the CSS that scripts inserted through
 * the CSSOM (CSS-in-JS libraries in production mode), which the serialised HTML does not carry.
 */
export const READ_PAGE_SCRIPT = `(() => {
  const canvas = document.createElement('canvas');
  canvas.width = 1; canvas.height = 1;
  const g = canvas.getContext('2d', { willReadFrequently: true });
  const toHex = (value) => {
    if (!g || !value) return null;
    g.clearRect(0, 0, 1, 1);
    g.fillStyle = '#000000';
    g.fillStyle = value;
    g.fillRect(0, 0, 1, 1);
    const d = g.getImageData(0, 0, 1, 1).data;
    if (d[3] < 128) return null;
    return '#' + [d[0], d[1], d[2]].map((v) => v.toString(16).padStart(2, '0')).join('');
  };
  const families = (v) => (String(v).slice(0, 4000).match(/"[^"]*"|'[^']*'|[^,]+/g) || []).slice(0, 20).map((s) => s.trim().replace(/^["']|["']$/g, '').trim().slice(0, 200)).filter(Boolean);
  const style = (el) => {
    const cs = getComputedStyle(el);
    return { fontFamily: families(cs.fontFamily), color: toHex(cs.color), background: toHex(cs.backgroundColor) };
  };
  const visible = (el) => {
    const r = el.getBoundingClientRect();
    const cs = getComputedStyle(el);
    return r.width > 0 && r.height > 0 && cs.visibility !== 'hidden' && cs.display !== 'none' && Number(cs.opacity) > 0.1;
  };
  const all = (selector, n, skip) => {
    const out = [];
    let looked = 0;
    for (const el of document.querySelectorAll(selector)) {
      if (out.length >= n || looked++ >= ${MAX_LOOKED}) break;
      if (skip && el.closest(skip)) continue;
      if (visible(el)) out.push(style(el));
    }
    return out;
  };
  const first = (selector) => all(selector, 1)[0] || null;
  let body = null;
  if (document.body) {
    body = style(document.body);
    if (!body.background) body.background = style(document.documentElement).background;
  }
  let links = all('a[href]', 12, 'header, nav, footer, [role=banner], [role=navigation]');
  if (!links.length) links = all('a[href]', 12);
  const computed = {
    body,
    h1: first('h1'),
    h2: first('h2'),
    h3: first('h3'),
    buttons: all('button, [role=button], input[type=submit], input[type=button], a.btn, a.button, .btn, .button', 8),
    links,
    header: all('header, [role=banner], nav', 3),
  };
  const css = [];
  let size = 0;
  const take = (sheet) => {
    const rules = [];
    let length = 0;
    try {
      for (const r of sheet.cssRules) {
        const t = r.cssText;
        length += t.length + 1;
        if (size + length > ${MAX_CSSOM_CHARS}) return;
        rules.push(t);
      }
    } catch { return; }
    if (!rules.length) return;
    size += length;
    css.push(rules.join('\\n'));
  };
  for (const sheet of Array.from(document.styleSheets)) {
    const node = sheet.ownerNode;
    if (sheet.href || !node || node.nodeName !== 'STYLE') continue;
    if ((node.textContent || '').trim() === '' && sheet.cssRules.length) take(sheet);
  }
  for (const sheet of document.adoptedStyleSheets || []) take(sheet);
  return { computed, css };
})()`;

export interface PageReading {
  computed: RenderedStyles;
  css: string[];
}

const isHex = (v: unknown): v is string => typeof v === 'string' && /^#[0-9a-f]{6}$/.test(v);

function element(v: unknown): RenderedElementStyle | null {
  if (!v || typeof v !== 'object') return null;
  const o = v as Record<string, unknown>;
  const fontFamily = Array.isArray(o.fontFamily) ? o.fontFamily.filter((f): f is string => typeof f === 'string').slice(0, 20).map((f) => f.slice(0, 200)) : [];
  return { fontFamily, color: isHex(o.color) ? o.color : null, background: isHex(o.background) ? o.background : null };
}

const list = (v: unknown, max: number): RenderedElementStyle[] =>
  Array.isArray(v) ? v.slice(0, max).map(element).filter((e): e is RenderedElementStyle => e !== null) : [];

/** What the page script returned, checked: the page's own scripts could have replaced any global it uses. */
export function checkReading(raw: unknown): PageReading {
  const o = (raw && typeof raw === 'object' ? raw : {}) as Record<string, unknown>;
  const c = (o.computed && typeof o.computed === 'object' ? o.computed : {}) as Record<string, unknown>;
  const css = Array.isArray(o.css) ? o.css.filter((t): t is string => typeof t === 'string') : [];
  let size = 0;
  return {
    computed: {
      body: element(c.body),
      h1: element(c.h1),
      h2: element(c.h2),
      h3: element(c.h3),
      buttons: list(c.buttons, 8),
      links: list(c.links, 12),
      header: list(c.header, 3),
    },
    css: css.filter((t) => (size += t.length) <= MAX_CSSOM_CHARS),
  };
}
