import type * as csstree from 'css-tree';
import { colorOfNode, isChromatic, parseColorText, toHex } from './colors.js';
import { expandVars, type Decl, type StyleRule } from './css.js';
import type { ColorRole, ColorSource, KitColor } from './schema.js';

export const ROLES: ColorRole[] = ['primary', 'secondary', 'accent', 'background', 'text'];

interface Tally {
  score: number;
  hints: Map<ColorRole, number>;
  sources: Set<ColorSource>;
  variables: Set<string>;
}

/** Colours seen on a page or in images, with how much they are used and what roles they hint at. */
export class ColorTally {
  private readonly colors = new Map<string, Tally>();

  add(hex: string, score: number, source: ColorSource, hint?: { role: ColorRole; strength: number }, variable?: string): void {
    let t = this.colors.get(hex);
    if (!t) {
      t = { score: 0, hints: new Map(), sources: new Set(), variables: new Set() };
      this.colors.set(hex, t);
    }
    t.score += score;
    t.sources.add(source);
    if (hint) t.hints.set(hint.role, (t.hints.get(hint.role) ?? 0) + hint.strength);
    if (variable) t.variables.add(variable);
  }

  get size(): number {
    return this.colors.size;
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
    const pairs: { role: ColorRole; hex: string; strength: number }[] = [];
    for (const [hex, t] of this.colors) for (const [role, strength] of t.hints) pairs.push({ role, hex, strength });
    pairs.sort((a, b) => b.strength - a.strength || (this.colors.get(b.hex)?.score ?? 0) - (this.colors.get(a.hex)?.score ?? 0));
    for (const shared of [false, true]) {
      for (const p of pairs) {
        if (roles[p.role] || (!shared && holders.has(p.hex))) continue;
        roles[p.role] = p.hex;
        holders.add(p.hex);
      }
    }
    const byUse = [...this.colors.entries()].sort((a, b) => b[1].score - a[1].score || a[0].localeCompare(b[0]));
    for (const role of ['primary', 'secondary', 'accent'] as const) {
      if (roles[role]) continue;
      const next = byUse.find(([hex]) => !holders.has(hex) && isChromatic(hex));
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

type SelectorKind = 'base' | 'button' | 'link' | 'heading' | 'other';

export function selectorKind(selectors: string[]): SelectorKind {
  const rank: SelectorKind[] = ['base', 'button', 'link', 'heading'];
  let best: SelectorKind = 'other';
  for (const s of selectors) {
    let k: SelectorKind = 'other';
    if (/^(html|body|:root|html\s+body)$/.test(s)) k = 'base';
    else if (/(^|[\s>+~.#])(button|btn|cta)([\s.:#[>+~_-]|$)|\[type=["']?submit/.test(s)) k = 'button';
    else if (/(^|[\s>+~])a([\s.:#[>+~]|$)|\.link\b/.test(s)) k = 'link';
    else if (/(^|[\s>+~,(])h[1-3]([\s.:#[>+~)]|$)/.test(s)) k = 'heading';
    if (rank.indexOf(k) >= 0 && (best === 'other' || rank.indexOf(k) < rank.indexOf(best))) best = k;
  }
  return best;
}

const USE_WEIGHT: Record<SelectorKind, number> = { base: 3, button: 2, link: 1.5, heading: 1.5, other: 1 };
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

/** The colours in a value: literal colours at the top level and inside gradients. */
function colorsIn(nodes: csstree.CssNode[], depth = 0): { hex: string; alpha: number }[] {
  const out: { hex: string; alpha: number }[] = [];
  for (const n of nodes) {
    const c = colorOfNode(n);
    if (c) out.push({ hex: toHex(c), alpha: c.a });
    else if (n.type === 'Function' && /gradient$/i.test(n.name) && depth < 2) out.push(...colorsIn(n.children.toArray(), depth + 1));
  }
  return out;
}

function hintFor(kind: SelectorKind, property: string, selectors: string[]): { role: ColorRole; strength: number } | undefined {
  const bg = property === 'background' || property === 'background-color';
  const states = selectors.every((s) => /:(hover|focus|active|visited)/.test(s));
  if (kind === 'base' && bg) return { role: 'background', strength: 8 };
  if (kind === 'base' && property === 'color') return { role: 'text', strength: 8 };
  if (kind === 'button' && bg) return { role: 'primary', strength: states ? 1 : 3 };
  if (kind === 'link' && property === 'color') return { role: 'accent', strength: states ? 1 : 3 };
  if (kind === 'heading' && property === 'color') return { role: 'primary', strength: 1.5 };
  if (property === 'accent-color') return { role: 'accent', strength: 2 };
  return undefined;
}

/** Colours used half-transparent or less do not count: they are overlays, not the brand. */
const visible = (alpha: number) => alpha >= 0.5;

/** Tallies the colours of a page's rules, its custom properties and its theme-color. */
export function tallyPage(tally: ColorTally, rules: StyleRule[], vars: Map<string, Decl>, themeColors: string[]): void {
  for (const [name, decl] of vars) {
    const colors = colorsIn(expandVars(decl.nodes, vars));
    if (colors.length !== 1 || !visible(colors[0]!.alpha)) continue;
    tally.add(colors[0]!.hex, 2, 'css_variable', variableRole(name) ?? undefined, name);
  }
  const theme = themeColors.map((t) => parseColorText(t.trim())).find((c) => c && visible(c.a));
  if (theme) tally.add(toHex(theme), 3, 'theme_color', { role: 'primary', strength: 5 });
  for (const rule of rules) {
    const kind = rule.inline ? 'other' : selectorKind(rule.selectors);
    for (const d of rule.decls) {
      if (!COLOR_PROPERTIES.has(d.property)) continue;
      const found = colorsIn(expandVars(d.nodes, vars)).filter((c) => visible(c.alpha));
      const weight = USE_WEIGHT[kind] * (d.property.startsWith('border') || d.property === 'outline-color' ? 0.5 : 1);
      for (const c of found) tally.add(c.hex, weight, 'css', found.length === 1 ? hintFor(kind, d.property, rule.selectors) : undefined);
    }
  }
}
