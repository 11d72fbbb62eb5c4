import * as csstree from 'css-tree';
import { NAMED_COLORS } from './named-colors.js';

/** A colour in sRGB, channels 0..255 (integers), alpha 0..1. */
export interface Rgba {
  r: number;
  g: number;
  b: number;
  a: number;
}

const clamp = (v: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, v));

/** #rrggbb, lower case: the one form every colour in a brand kit takes. */
export function toHex(c: Pick<Rgba, 'r' | 'g' | 'b'>): string {
  return `#${[c.r, c.g, c.b].map((v) => clamp(Math.round(v), 0, 255).toString(16).padStart(2, '0')).join('')}`;
}

/** #rgb, #rgba, #rrggbb, #rrggbbaa (the leading # optional). */
export function parseHex(raw: string): Rgba | null {
  const h = raw.replace(/^#/, '').toLowerCase();
  if (!/^[0-9a-f]+$/.test(h) || ![3, 4, 6, 8].includes(h.length)) return null;
  const full = h.length <= 4 ? [...h].map((c) => c + c).join('') : h;
  const n = (i: number) => parseInt(full.slice(i, i + 2), 16);
  return { r: n(0), g: n(2), b: n(4), a: full.length === 8 ? n(6) / 255 : 1 };
}

/** One argument of rgb()/hsl(): a number with its unit ('' for a plain number, '%' for a percentage). */
interface Arg {
  value: number;
  unit: string;
}

function argsOf(fn: csstree.FunctionNode): Arg[] | null {
  const args: Arg[] = [];
  for (const node of fn.children) {
    if (node.type === 'Number') args.push({ value: Number(node.value), unit: '' });
    else if (node.type === 'Percentage') args.push({ value: Number(node.value), unit: '%' });
    else if (node.type === 'Dimension') args.push({ value: Number(node.value), unit: node.unit.toLowerCase() });
    else if (node.type === 'Identifier' && node.name.toLowerCase() === 'none') args.push({ value: 0, unit: '' });
    else if (node.type === 'Operator' && (node.value === ',' || node.value === '/')) continue;
    else if (node.type === 'WhiteSpace') continue;
    else return null; // var(), calc(), relative colours: not a literal colour
  }
  return args.every((a) => Number.isFinite(a.value)) ? args : null;
}

function alphaOf(arg: Arg | undefined): number {
  if (!arg) return 1;
  return clamp(arg.unit === '%' ? arg.value / 100 : arg.value, 0, 1);
}

function hueDegrees(arg: Arg): number | null {
  const factor: Record<string, number> = { '': 1, deg: 1, grad: 0.9, rad: 180 / Math.PI, turn: 360 };
  const f = factor[arg.unit];
  return f === undefined ? null : arg.value * f;
}

/** hsl (degrees, 0..1, 0..1) to sRGB 0..255, as CSS Color 4 defines it. */
export function hslToRgb(h: number, s: number, l: number): { r: number; g: number; b: number } {
  const hue = ((h % 360) + 360) % 360;
  const f = (n: number) => {
    const k = (n + hue / 30) % 12;
    return l - s * Math.min(l, 1 - l) * Math.max(-1, Math.min(k - 3, 9 - k, 1));
  };
  return { r: Math.round(f(0) * 255), g: Math.round(f(8) * 255), b: Math.round(f(4) * 255) };
}

function fromFunction(fn: csstree.FunctionNode): Rgba | null {
  const name = fn.name.toLowerCase();
  const args = argsOf(fn);
  if (!args || args.length < 3 || args.length > 4) return null;
  const [a0, a1, a2, a3] = args as [Arg, Arg, Arg, Arg | undefined];
  if (name === 'rgb' || name === 'rgba') {
    const channel = (x: Arg) => (x.unit === '%' ? (x.value * 255) / 100 : x.unit === '' ? x.value : NaN);
    const [r, g, b] = [channel(a0), channel(a1), channel(a2)];
    if (![r, g, b].every(Number.isFinite)) return null;
    return { r: clamp(Math.round(r), 0, 255), g: clamp(Math.round(g), 0, 255), b: clamp(Math.round(b), 0, 255), a: alphaOf(a3) };
  }
  if (name === 'hsl' || name === 'hsla') {
    const h = hueDegrees(a0);
    if (h === null || (a1.unit !== '%' && a1.unit !== '') || (a2.unit !== '%' && a2.unit !== '')) return null;
    const rgb = hslToRgb(h, clamp(a1.value / 100, 0, 1), clamp(a2.value / 100, 0, 1));
    return { ...rgb, a: alphaOf(a3) };
  }
  return null;
}

/** The colour a single value node stands for: a hex, rgb()/hsl() with literal arguments, or a named colour. */
export function colorOfNode(node: csstree.CssNode): Rgba | null {
  if (node.type === 'Hash') return parseHex(node.value);
  if (node.type === 'Function') return fromFunction(node);
  if (node.type === 'Identifier') {
    const hex = NAMED_COLORS.get(node.name.toLowerCase());
    return hex ? parseHex(hex) : null;
  }
  return null;
}

/** Parses a CSS value (e.g. from a meta tag or a custom property) that should be one colour. */
export function parseColorText(text: string): Rgba | null {
  const nodes = parseValueNodes(text);
  return nodes.length === 1 && nodes[0] ? colorOfNode(nodes[0]) : null;
}

const valueCache = new Map<string, csstree.CssNode[]>();

/** A value's top-level nodes (whitespace dropped); a value that does not parse gives none. */
export function parseValueNodes(text: string): csstree.CssNode[] {
  const cached = valueCache.get(text);
  if (cached) return cached;
  let nodes: csstree.CssNode[] = [];
  try {
    const ast = csstree.parse(text, { context: 'value', onParseError: () => undefined });
    if (ast.type === 'Value') nodes = ast.children.toArray().filter((n) => n.type !== 'WhiteSpace');
  } catch {
    nodes = [];
  }
  if (valueCache.size > 5000) valueCache.clear();
  valueCache.set(text, nodes);
  return nodes;
}

/** Saturation and lightness (HSL, 0..1), to tell brand colours from greys. */
export function hsl(c: Pick<Rgba, 'r' | 'g' | 'b'>): { s: number; l: number } {
  const r = c.r / 255;
  const g = c.g / 255;
  const b = c.b / 255;
  const max = Math.max(r, g, b);
  const min = Math.min(r, g, b);
  const l = (max + min) / 2;
  const d = max - min;
  const s = d === 0 ? 0 : d / (1 - Math.abs(2 * l - 1));
  return { s, l };
}

/** A colour a brand would call its own: saturated, neither near black nor near white. */
export function isChromatic(hex: string): boolean {
  const c = parseHex(hex);
  if (!c) return false;
  const { s, l } = hsl(c);
  return s >= 0.25 && l >= 0.12 && l <= 0.92;
}

/** CIE L*a*b* (D65) of an sRGB colour: lightness 0..100 and the two colour axes. */
export function toLab(c: Pick<Rgba, 'r' | 'g' | 'b'>): { l: number; a: number; b: number } {
  const lin = (v: number) => {
    const x = v / 255;
    return x <= 0.04045 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4;
  };
  const [r, g, b] = [lin(c.r), lin(c.g), lin(c.b)];
  const x = (0.4124564 * r + 0.3575761 * g + 0.1804375 * b) / 0.95047;
  const y = 0.2126729 * r + 0.7151522 * g + 0.072175 * b;
  const z = (0.0193339 * r + 0.119192 * g + 0.9503041 * b) / 1.08883;
  const f = (t: number) => (t > 216 / 24389 ? Math.cbrt(t) : ((24389 / 27) * t + 16) / 116);
  return { l: 116 * f(y) - 16, a: 500 * (f(x) - f(y)), b: 200 * (f(y) - f(z)) };
}

/**
 * Chroma (C*ab) below which a colour reads as a grey, a tinted grey included (Tailwind's
 * gray-800 #1f2937 has an HSL saturation of 0.28 but a chroma of 11): HSL exaggerates the
 * saturation of very dark and very light colours.
 */
const GREY_CHROMA = 14;

/** How colourful a colour looks (C*ab, 0 for greys, about 30 and up for brand hues). */
export function chroma(hex: string): number {
  const c = parseHex(hex);
  if (!c) return 0;
  const { a, b } = toLab(c);
  return Math.hypot(a, b);
}

/** A grey (tinted greys included): never a brand's colour where a hue has a claim too. */
export const isGrey = (hex: string) => chroma(hex) < GREY_CHROMA;

/** L* of a colour, 0 (black) to 100 (white). */
export function lightness(hex: string): number {
  const c = parseHex(hex);
  return c ? toLab(c).l : 0;
}
