import type * as csstree from 'css-tree';
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

const isGeneric = (f: string) => GENERIC.has(f.toLowerCase());

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
  rank: number;
}

const HEADING_RANK = (s: string): number => {
  const m = /(^|[\s>+~,(])h([1-3])([\s.:#[>+~)]|$)/.exec(s);
  return m ? 4 - Number(m[2]) : 0;
};
const BODY_RANK = (s: string): number => (s === 'body' || s === 'html body' ? 3 : s === 'html' ? 2 : s === ':root' ? 1 : 0);
const HEADING_VAR = /^--(font-)?(heading|headings|display|title)(-font|-family)?$|^--font-family-(heading|display)$/i;
const BODY_VAR = /^--(font-)?(body|base|sans|text|default)(-font|-family)?$|^--font-family-(body|base|sans)$/i;

function better(current: Found | null, next: Found): Found {
  // The higher-ranked selector wins; among equals the later rule wins, as in the cascade.
  return !current || next.rank >= current.rank ? next : current;
}

/**
 * Fonts with roles (heading: h1-h3, body: body/html; custom properties such as --font-heading as
 * a fallback) and sources (@font-face src URLs, font service stylesheets), merged by family name.
 */
export function extractFonts(
  rules: StyleRule[],
  vars: Map<string, Decl>,
  fontFaces: FontFace[],
  services: { url: string; provider: FontProvider; families?: string[] }[],
): { fonts: KitFont[]; services: { provider: FontProvider; url: string; families: string[] }[] } {
  let heading: Found | null = null;
  let body: Found | null = null;
  for (const rule of rules) {
    if (rule.inline) continue;
    for (const d of rule.decls) {
      if (d.property !== 'font-family' && d.property !== 'font') continue;
      const families = familiesOf(d.property, expandVars(d.nodes, vars));
      if (!families.length) continue;
      const h = Math.max(0, ...rule.selectors.map(HEADING_RANK));
      const b = Math.max(0, ...rule.selectors.map(BODY_RANK));
      if (h) heading = better(heading, { families, rank: h });
      if (b) body = better(body, { families, rank: b });
    }
  }
  for (const [name, decl] of vars) {
    const families = familyList(expandVars(decl.nodes, vars));
    if (!families.length) continue;
    if (!heading && HEADING_VAR.test(name)) heading = { families, rank: 0 };
    if (!body && BODY_VAR.test(name)) body = { families, rank: 0 };
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
