import * as csstree from 'css-tree';
import { colorOfNode, hsl, isChromatic, isGrey, parseColorText, parseHex, toHex } from './colors.js';
import { expandVars, type Decl, type StyleRule, type Vars } from './css.js';
import type { Element } from './cascade.js';
import { stockColors } from './frameworks.js';
import { tallyUsage } from './usage.js';
import type { ColorRole, ColorSource, KitColor } from './schema.js';

export const ROLES: ColorRole[] = ['primary', 'secondary', 'accent', 'background', 'text'];

/** Whether a colour may be a brand colour (primary, secondary, accent): not near white, not near black. */
export function brandable(hex: string): boolean {
  const c = parseHex(hex);
  if (!c) return false;
  const { l } = hsl(c);
  return l > 0.08 && l < 0.94;
}

/** A hue's hint, from this share of the strongest grey's up, puts it before the greys. */
const HUE_OVER_GREY = 0.25;

/**
 * Brand roles go to a hue before a grey: demo buttons, disabled states and neutral chrome are
 * grey on most pages, and a grey is a brand's own colour only where no hue is claimed as well.
 */
function huesFirst<T extends [string, { hints: Map<ColorRole, number> }]>(hinted: T[], role: ColorRole): T[] {
  const grey = hinted.find(([hex]) => isGrey(hex));
  const hue = hinted.find(([hex]) => !isGrey(hex));
  if (!grey || !hue || (hue[1].hints.get(role) ?? 0) < HUE_OVER_GREY * (grey[1].hints.get(role) ?? 0)) return hinted;
  return [...hinted.filter(([hex]) => !isGrey(hex)), ...hinted.filter(([hex]) => isGrey(hex))];
}

/** A rule all of whose selectors are a state (hover, focus, active, open, disabled): its colours are shades of the base. */
export const isStateRule = (selectors: string[]) =>
  selectors.length > 0 && selectors.every((s) => /:(hover|focus|active|visited|focus-visible|focus-within|disabled|checked)|\.(focus|active|hover|disabled|open|show|selected|current)([\s.:#[>+~,)]|$)|\[disabled\]|\[aria-(expanded|pressed|current)/.test(s));

/** A hint that a colour holds a role; from says what gave it ("button backgrounds", "theme-color"), for the kit's warnings. */
export type Hint = { role: ColorRole; strength: number; from?: string };

interface Tally {
  score: number;
  hints: Map<ColorRole, number>;
  /** Per role, what gave the hints (see Hint.from) and how much each gave. */
  from: Map<ColorRole, Map<string, number>>;
  sources: Set<ColorSource>;
  variables: Set<string>;
}

/** Colours seen on a page or in images, with how much they are used and what roles they hint at. */
export class ColorTally {
  private readonly colors = new Map<string, Tally>();

  add(hex: string, score: number, source: ColorSource, hint?: Hint, variable?: string): void {
    let t = this.colors.get(hex);
    if (!t) {
      t = { score: 0, hints: new Map(), from: new Map(), sources: new Set(), variables: new Set() };
      this.colors.set(hex, t);
    }
    t.score += score;
    t.sources.add(source);
    if (hint && hint.strength > 0) {
      t.hints.set(hint.role, (t.hints.get(hint.role) ?? 0) + hint.strength);
      const from = t.from.get(hint.role) ?? new Map<string, number>();
      const label = hint.from ?? source;
      from.set(label, (from.get(label) ?? 0) + hint.strength);
      t.from.set(hint.role, from);
    }
    if (variable) t.variables.add(variable);
  }

  get size(): number {
    return this.colors.size;
  }

  /** The colours hinted for a role, strongest first, with what hinted them. */
  evidence(role: ColorRole): { hex: string; strength: number; score: number; from: Map<string, number> }[] {
    return [...this.colors.entries()]
      .filter(([, t]) => (t.hints.get(role) ?? 0) > 0)
      .map(([hex, t]) => ({ hex, strength: t.hints.get(role) ?? 0, score: t.score, from: t.from.get(role) ?? new Map<string, number>() }))
      .sort((a, b) => b.strength - a.strength || b.score - a.score);
  }

  /**
   * The palette: the most used colours (at most `limit`, plus any holding a role), weights summing
   * to 1, and each role given to one colour. Roles go by the strongest hints first, one role per
   * colour while that is possible; primary, secondary and accent left without a hint fall back to
   * the most used saturated colours.
   */
  palette(limit = 10): { colors: KitColor[]; roles: Record<ColorRole, string | null> } {
    const roles: Record<ColorRole, string | null> = { primary: null, secondary: null, accent: null, background: null, text: null };
    const holders = new Set<string>();
    // Role by role, each to the colour with the strongest hint for it: a colour another role took
    // only when no other colour has a hint (the link colour may be the primary colour too). Brand
    // roles never go to a near-white or near-black.
    for (const role of ['background', 'text', 'primary', 'secondary', 'accent'] as const) {
      let hinted = [...this.colors.entries()]
        .filter(([hex, t]) => (t.hints.get(role) ?? 0) > 0 && (role === 'background' || role === 'text' || brandable(hex)))
        .sort((a, b) => (b[1].hints.get(role) ?? 0) - (a[1].hints.get(role) ?? 0) || b[1].score - a[1].score);
      if (role !== 'background' && role !== 'text') hinted = huesFirst(hinted, role);
      const pick = hinted.find(([hex]) => !holders.has(hex)) ?? hinted[0];
      if (!pick) continue;
      roles[role] = pick[0];
      holders.add(pick[0]);
    }
    const byUse = [...this.colors.entries()].sort((a, b) => b[1].score - a[1].score || a[0].localeCompare(b[0]));
    for (const role of ['primary', 'secondary', 'accent'] as const) {
      if (roles[role]) continue;
      const next = byUse.find(([hex]) => !holders.has(hex) && isChromatic(hex) && brandable(hex));
      if (!next) break;
      roles[role] = next[0];
      holders.add(next[0]);
    }
    const chosen = byUse.filter(([hex], i) => i < limit || holders.has(hex));
    const total = chosen.reduce((s, [, t]) => s + t.score, 0) || 1;
    const colors = chosen.map(([hex, t]) => ({
      hex,
      roles: ROLES.filter((r) => roles[r] === hex),
      weight: Math.round((t.score / total) * 10_000) / 10_000,
      sources: [...t.sources].sort(),
      variables: [...t.variables].sort(),
    }));
    return { colors, roles };
  }
}

/** The role a custom property's name claims, and how strongly (a variant such as -hover or -light claims less). */
export function variableRole(name: string): { role: ColorRole; strength: number } | null {
  const n = name.toLowerCase().replace(/^--/, '');
  const words = n.split(/[-_]+/);
  const has = (...w: string[]) => w.some((x) => words.includes(x));
  let role: ColorRole | null = null;
  if (has('secondary')) role = 'secondary';
  else if (has('accent', 'highlight', 'tertiary')) role = 'accent';
  else if (has('bg', 'background', 'surface', 'canvas', 'paper')) role = 'background';
  else if (has('text', 'foreground', 'fg', 'ink', 'body')) role = 'text';
  else if (has('primary', 'brand', 'main', 'theme')) role = 'primary';
  if (!role) return null;
  const variant = words.some((w) => /^(hover|active|focus|visited|disabled|light|lighter|dark|darker|muted|subtle|soft|contrast|alt|\d+)$/.test(w));
  return { role, strength: variant ? 2 : 10 };
}

type SelectorKind = 'base' | 'primary' | 'button' | 'link' | 'nav' | 'heading' | 'other';

export function selectorKind(selectors: string[]): SelectorKind {
  const rank: SelectorKind[] = ['base', 'primary', 'button', 'link', 'nav', 'heading'];
  let best: SelectorKind = 'other';
  for (const s of selectors) {
    let k: SelectorKind = 'other';
    const last = s.split(/[\s>+~]+/).pop() ?? s;
    if (/^(html|body|:root|html\s+body)$/.test(s)) k = 'base';
    else if (/\.[\w-]*(primary|brand)([\w-]*)?(?![\w-])/.test(last) && !/(^|[-_])(text|fg|bg)?-?(on|contrast)-?(primary|brand)/.test(last)) k = 'primary';
    else if (/(^|[\s>+~.#])(button|btn|cta)([\s.:#[>+~_-]|$)|\[type=["']?submit/.test(s)) k = 'button';
    else if (/(^|[\s>+~])a([\s.:#[>+~]|$)|\.link\b/.test(s)) k = 'link';
    else if (/(^|[.#\s])(header|navbar|nav|masthead|topbar|site-header)([\s.:#[>+~]|$)|^(header|nav)$/.test(last)) k = 'nav';
    else if (/(^|[\s>+~,(])h[1-3]([\s.:#[>+~)]|$)/.test(s)) k = 'heading';
    if (rank.indexOf(k) >= 0 && (best === 'other' || rank.indexOf(k) < rank.indexOf(best))) best = k;
  }
  return best;
}

const USE_WEIGHT: Record<SelectorKind, number> = { base: 3, primary: 2, button: 2, link: 1.5, nav: 1.5, heading: 1.5, other: 1 };
const COLOR_PROPERTIES = new Set([
  'color',
  'background',
  'background-color',
  'background-image',
  'border',
  'border-color',
  'border-top',
  'border-bottom',
  'border-left',
  'border-right',
  'border-top-color',
  'border-bottom-color',
  'outline-color',
  'fill',
  'stroke',
  'text-decoration-color',
  'accent-color',
]);

/** A function whose arguments hold var(): the same function with them expanded (rgb(108 43 217 / var(--tw-bg-opacity))). */
function expandArgs(n: csstree.FunctionNode, vars: Vars): csstree.FunctionNode {
  let hasVar = false;
  n.children.forEach((c) => {
    if (c.type === 'Function' && c.name.toLowerCase() === 'var') hasVar = true;
  });
  if (!hasVar) return n;
  return { ...n, children: new csstree.List<csstree.CssNode>().fromArray(expandVars(n.children.toArray(), vars)) };
}

/** The colours in a value: literal colours at the top level and inside gradients. */
export function colorsIn(nodes: csstree.CssNode[], vars: Vars, depth = 0): { hex: string; alpha: number }[] {
  const out: { hex: string; alpha: number }[] = [];
  for (const raw of nodes) {
    const n = raw.type === 'Function' ? expandArgs(raw, vars) : raw;
    const c = colorOfNode(n);
    if (c) out.push({ hex: toHex(c), alpha: c.a });
    else if (n.type === 'Function' && /gradient$/i.test(n.name) && depth < 2) out.push(...colorsIn(n.children.toArray(), vars, depth + 1));
  }
  return out;
}


function hintsFor(kind: SelectorKind, property: string, selectors: string[]): Hint[] {
  const bg = property === 'background' || property === 'background-color';
  // A state's shade (hover, focus, .active) hints a little: repeated, it must not outvote the base.
  const f = isStateRule(selectors) ? 0.15 : 1;
  if (kind === 'base' && bg) return [{ role: 'background', strength: 8, from: 'the body rule' }];
  if (kind === 'base' && property === 'color') return [{ role: 'text', strength: 8, from: 'the body rule' }];
  if (kind === 'primary') return [{ role: 'primary', strength: (bg ? 6 : property === 'color' ? 3 : 1) * f, from: 'rules named primary or brand' }];
  if (kind === 'button' && bg) return [{ role: 'primary', strength: 3 * f, from: 'button rules' }];
  if (kind === 'nav' && bg) return [{ role: 'primary', strength: 2 * f, from: 'header rules' }];
  if (kind === 'link' && property === 'color') return [{ role: 'accent', strength: 3 * f, from: 'link rules' }, { role: 'primary', strength: 0.75 * f, from: 'link rules' }];
  if (kind === 'heading' && property === 'color') return [{ role: 'primary', strength: 1.5 * f, from: 'heading rules' }];
  if (property === 'accent-color') return [{ role: 'accent', strength: 2, from: 'accent-color' }];
  return [];
}

/** How much a framework's stock colour hints from its stylesheets, against a colour the site chose. */
const STOCK_FACTOR = 0.1;

/** Colours used half-transparent or less do not count: they are overlays, not the brand. */
const visible = (alpha: number) => alpha >= 0.5;

/** Tallies the colours of a page's rules, its custom properties, its theme-color and, with the page's tree, where colours are used on it. */
export function tallyPage(
  tally: ColorTally,
  rules: StyleRule[],
  vars: Map<string, Decl>,
  themeColors: string[],
  page?: { document: { childNodes: unknown[] } | null; cascadeRules: StyleRule[] },
): void {
  // Hints born of stylesheets wait until the page's frameworks are known: a framework's stock
  // colours there are its defaults, shipped to every site, so they hint at a tenth of the weight.
  const pending: { hex: string; score: number; source: ColorSource; hint?: Hint; variable?: string }[] = [];
  const declared = new Set<string>();
  for (const [name, decl] of vars) {
    const colors = colorsIn(expandVars(decl.nodes, vars), vars);
    if (colors.length !== 1 || !visible(colors[0]!.alpha)) continue;
    const role = variableRole(name);
    declared.add(colors[0]!.hex);
    pending.push({ hex: colors[0]!.hex, score: 2, source: 'css_variable', ...(role ? { hint: { ...role, from: `the custom property ${name}` } } : {}), variable: name });
  }
  for (const rule of rules) {
    const kind = rule.inline ? 'other' : selectorKind(rule.selectors);
    // A rule's own custom properties (Tailwind's --tw-bg-opacity) come before the page's.
    const own = rule.decls.filter((d) => d.property.startsWith('--'));
    const scope: Vars = own.length ? { get: (k: string) => [...own].reverse().find((d) => d.property === k) ?? vars.get(k) } : vars;
    for (const d of rule.decls) {
      if (!COLOR_PROPERTIES.has(d.property)) continue;
      const found = colorsIn(expandVars(d.nodes, scope), scope).filter((c) => visible(c.alpha));
      const weight = USE_WEIGHT[kind] * (d.property.startsWith('border') || d.property === 'outline-color' ? 0.5 : 1) * (isStateRule(rule.selectors) ? 0.3 : 1);
      const hints = found.length === 1 ? hintsFor(kind, d.property, rule.selectors) : [];
      for (const c of found) {
        declared.add(c.hex);
        pending.push({ hex: c.hex, score: weight, source: 'css' });
        for (const h of hints) pending.push({ hex: c.hex, score: 0, source: 'css', hint: h });
      }
    }
  }
  const stock = stockColors(declared);
  for (const p of pending) {
    const hint = p.hint && stock.has(p.hex) ? { ...p.hint, strength: p.hint.strength * STOCK_FACTOR, from: `${p.hint.from ?? 'rules'} (a framework's stock colour)` } : p.hint;
    tally.add(p.hex, p.score, p.source, hint, p.variable);
  }
  const theme = themeColors.map((t) => parseColorText(t.trim())).find((c) => c && visible(c.a));
  // A white or black theme-color is the browser chrome's, not a brand colour.
  if (theme) tally.add(toHex(theme), 3, 'theme_color', brandable(toHex(theme)) ? { role: 'primary', strength: 5, from: 'theme-color' } : undefined);
  if (page?.document) tallyUsage(tally, page.document as unknown as Element, page.cascadeRules, vars);
}
