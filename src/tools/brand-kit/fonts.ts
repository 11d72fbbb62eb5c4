import type * as csstree from 'css-tree';
import type { DefaultTreeAdapterMap } from 'parse5';
import { Cascade, parentElement, type Element } from './cascade.js';
import { expandVars, familyList, type Decl, type FontFace, type FontProvider, type StyleRule } from './css.js';
import { familiesInFontUrl } from './html.js';
import type { KitFont } from './schema.js';

const GENERIC = new Set([
  'serif',
  'sans-serif',
  'monospace',
  'cursive',
  'fantasy',
  'system-ui',
  'ui-serif',
  'ui-sans-serif',
  'ui-monospace',
  'ui-rounded',
  'emoji',
  'math',
  'fangsong',
  '-apple-system',
  'blinkmacsystemfont',
  'inherit',
  'initial',
  'unset',
  'revert',
  'revert-layer',
]);

/** A generic family or a CSS-wide keyword: not a brand's font. */
export const isGeneric = (f: string) => GENERIC.has(f.toLowerCase());

/** The family list of a font-family value, or of the `font` shorthand (what follows the size). */
function familiesOf(property: string, nodes: csstree.CssNode[]): string[] {
  if (property === 'font-family') return familyList(nodes);
  // font: [style] [weight] size[/line-height] family, family
  let start = -1;
  nodes.forEach((n, i) => {
    if (n.type === 'Dimension' || n.type === 'Percentage' || (n.type === 'Identifier' && /^(x{0,3}-?small|medium|x{0,3}-?large|smaller|larger)$/i.test(n.name))) start = i + 1;
  });
  if (start < 0) return [];
  if (nodes[start]?.type === 'Operator' && (nodes[start] as csstree.Operator).value === '/') start += 2;
  return familyList(nodes.slice(start));
}

interface Found {
  families: string[];
}

const HEADING_VAR = /^--(font-)?(heading|headings|display|title)(-font|-family)?$|^--font-family-(heading|display)$/i;
const BODY_VAR = /^--(font-)?(body|base|sans|text|default)(-font|-family)?$|^--font-family-(body|base|sans)$/i;
const FONT_PROPS = ['font-family', 'font'];
const INHERITS = /^(inherit|unset|revert|revert-layer)$/i;

function findElements(doc: DefaultTreeAdapterMap['document'], tags: Set<string>, max: number): Element[] {
  const out: Element[] = [];
  const stack: DefaultTreeAdapterMap['node'][] = [doc];
  while (stack.length && out.length < max) {
    const n = stack.pop()!;
    if ('tagName' in n) {
      if (tags.has(n.tagName)) out.push(n);
      if (n.tagName === 'svg' || n.tagName === 'template' || n.tagName === 'script') continue;
    }
    if ('childNodes' in n) for (let i = n.childNodes.length - 1; i >= 0; i--) stack.push(n.childNodes[i]!);
  }
  return out;
}

/**
 * The family list an element renders with: the winning font-family or font declaration (by
 * importance, specificity and order, style attributes included); nothing, or inherit, means the
 * parent's, up to html.
 */
function computedFamilies(el: Element, cascade: Cascade, vars: Map<string, Decl>, cache: Map<Element, string[] | null>): string[] | null {
  if (cache.has(el)) return cache.get(el)!;
  let families: string[] | null = null;
  const decls = cascade.declared(el, FONT_PROPS);
  for (let i = decls.length - 1; i >= 0; i--) {
    const d = decls[i]!;
    const nodes = expandVars(d.nodes, vars);
    const list = familiesOf(d.property, nodes);
    const keyword = nodes.length === 1 && nodes[0]!.type === 'Identifier' ? nodes[0]!.name : null;
    if (INHERITS.test(list[0] ?? keyword ?? '')) break; // an explicit inherit: the parent's
    if (list.length) {
      families = list;
      break;
    }
    // A value we cannot read (a system font keyword, a broken var()): the next one down decides.
  }
  if (!families) {
    const parent = parentElement(el);
    families = parent ? computedFamilies(parent, cascade, vars, cache) : null;
  }
  cache.set(el, families);
  return families;
}

const HEADING_WEIGHT: Record<string, number> = { h1: 3, h2: 2, h3: 1 };
/** What a heading in the footer or an aside weighs against one in the page. */
const LABEL_AREA = 0.1;
const LABEL_PLACE = /(^|[\s_-])(footer|site-footer|page-footer|sidebar|aside|colophon)([\s_-]|$)/i;

/** A heading in the page's footer or an aside (tag, role, id or class): a label, not the page's voice. */
function inLabelArea(el: Element): boolean {
  for (let p = parentElement(el); p; p = parentElement(p)) {
    if (p.tagName === 'footer' || p.tagName === 'aside') return true;
    const role = p.attrs.find((a) => a.name === 'role')?.value ?? '';
    if (role === 'contentinfo' || role === 'complementary') return true;
    if (LABEL_PLACE.test(p.attrs.find((a) => a.name === 'id')?.value ?? '') || LABEL_PLACE.test(p.attrs.find((a) => a.name === 'class')?.value ?? '')) return true;
  }
  return false;
}

/**
 * Fonts with roles (body: what <body> renders with; heading: what the page's h1-h3 render with,
 * weighted h1 over h2 over h3, or a heading placed in body when the page has none; custom
 * properties such as --font-heading as a fallback) and sources (@font-face src URLs, font service
 * stylesheets), merged by family name.
 */
export function extractFonts(
  doc: DefaultTreeAdapterMap['document'] | null,
  rules: StyleRule[],
  vars: Map<string, Decl>,
  fontFaces: FontFace[],
  services: { url: string; provider: FontProvider; families?: string[] }[],
): { fonts: KitFont[]; services: { provider: FontProvider; url: string; families: string[] }[] } {
  let heading: Found | null = null;
  let body: Found | null = null;
  if (doc) {
    const cascade = new Cascade(rules, new Set(FONT_PROPS));
    const cache = new Map<Element, string[] | null>();
    const bodyEl = findElements(doc, new Set(['body']), 1)[0] ?? null;
    const bodyFamilies = bodyEl ? computedFamilies(bodyEl, cascade, vars, cache) : null;
    if (bodyFamilies) body = { families: bodyFamilies };
    let headings = findElements(doc, new Set(['h1', 'h2', 'h3']), 40);
    if (!headings.length && bodyEl) {
      // No heading on the page: the one a page would add, directly in body.
      headings = [{ nodeName: 'h1', tagName: 'h1', attrs: [], namespaceURI: bodyEl.namespaceURI, childNodes: [], parentNode: bodyEl } as unknown as Element];
    }
    // Each heading votes for the family it renders with, a system or generic font included (a
    // page whose headings use the system font has no heading font, whatever its footer uses);
    // headings in the footer or an aside are labels, and vote little.
    const votes = new Map<string, { weight: number; families: string[]; first: number }>();
    headings.forEach((h, i) => {
      const families = computedFamilies(h, cascade, vars, cache);
      if (!families?.length) return;
      const main = families.find((f) => !isGeneric(f))?.toLowerCase() ?? '';
      const v = votes.get(main) ?? { weight: 0, families, first: i };
      v.weight += (HEADING_WEIGHT[h.tagName] ?? 1) * (inLabelArea(h) ? LABEL_AREA : 1);
      votes.set(main, v);
    });
    const best = [...votes.values()].sort((a, b) => b.weight - a.weight || a.first - b.first)[0];
    if (best) heading = { families: best.families };
  }
  for (const [name, decl] of vars) {
    const families = familyList(expandVars(decl.nodes, vars));
    if (!families.length) continue;
    if (!heading && HEADING_VAR.test(name)) heading = { families };
    if (!body && BODY_VAR.test(name)) body = { families };
  }

  const fonts = new Map<string, KitFont>();
  const entry = (family: string): KitFont => {
    const key = family.toLowerCase();
    let f = fonts.get(key);
    if (!f) {
      f = { family, roles: [], fallbacks: [], sources: [] };
      fonts.set(key, f);
    }
    return f;
  };
  for (const [role, found] of [
    ['heading', heading],
    ['body', body],
  ] as const) {
    if (!found) continue;
    const main = found.families.findIndex((f) => !isGeneric(f));
    if (main < 0) continue;
    const f = entry(found.families[main]!);
    f.roles.push(role);
    if (!f.fallbacks.length) f.fallbacks = found.families.slice(main + 1);
  }
  const addSource = (f: KitFont, source: KitFont['sources'][number]) => {
    if (!f.sources.some((s) => s.url === source.url)) f.sources.push(source);
  };
  const serviceList: { provider: FontProvider; url: string; families: string[] }[] = [];
  for (const face of fontFaces) {
    const f = entry(face.family);
    for (const src of face.sources) addSource(f, { kind: face.provider ?? 'font_face', url: src.url, format: src.format });
  }
  for (const s of services) {
    const families = s.families ?? familiesInFontUrl(s.url);
    serviceList.push({ provider: s.provider, url: s.url, families });
    for (const family of families) addSource(entry(family), { kind: s.provider, url: s.url, format: null });
  }
  // Families with a role first (heading, then body), then the rest as they were found.
  const order = (f: KitFont) => (f.roles.includes('heading') ? 0 : f.roles.includes('body') ? 1 : 2);
  return { fonts: [...fonts.values()].sort((a, b) => order(a) - order(b)).slice(0, 20), services: serviceList };
}
