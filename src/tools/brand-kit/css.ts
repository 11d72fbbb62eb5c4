import * as csstree from 'css-tree';
import { parseValueNodes } from './colors.js';

/** Which font service served a stylesheet, if one did (its @font-face sources are credited to it). */
export type FontProvider = 'google_fonts' | 'adobe_fonts' | 'bunny_fonts';

/** One declaration, its value as parsed nodes (custom properties keep their raw text). */
export interface Decl {
  property: string;
  nodes: csstree.CssNode[];
  raw: string;
  /** Declared !important. */
  important: boolean;
}

export interface StyleRule {
  /** Each selector of the rule's list, lower-cased; an inline style attribute has none. */
  selectors: string[];
  decls: Decl[];
  inline: boolean;
}

export interface FontFace {
  family: string;
  sources: { url: string; format: string | null }[];
  provider: FontProvider | null;
}

export interface ParsedCss {
  rules: StyleRule[];
  fontFaces: FontFace[];
  /** Absolute URLs of @import rules, in order. */
  imports: string[];
}

/** Media conditions whose colours are not the page's default look. */
const SKIPPED_MEDIA = /print|prefers-color-scheme\s*:\s*dark|forced-colors|prefers-contrast/i;

function absolute(url: string, base: string): string | null {
  try {
    const u = new URL(url, base);
    return u.protocol === 'http:' || u.protocol === 'https:' || u.protocol === 'data:' ? u.toString() : null;
  } catch {
    return null;
  }
}

function declsOf(block: csstree.Block): Decl[] {
  const out: Decl[] = [];
  for (const node of block.children) {
    if (node.type !== 'Declaration') continue;
    const property = node.property.toLowerCase().startsWith('--') ? node.property : node.property.toLowerCase();
    const important = node.important !== false;
    if (node.value.type === 'Raw') {
      const raw = node.value.value.trim();
      // Custom properties are kept raw by the parser; their values are parsed when used.
      out.push({ property, raw, important, nodes: property.startsWith('--') ? parseValueNodes(raw) : [] });
    } else {
      out.push({ property, raw: '', important, nodes: node.value.children.toArray().filter((n) => n.type !== 'WhiteSpace') });
    }
  }
  return out;
}

function selectorsOf(prelude: csstree.SelectorList | csstree.Raw): string[] {
  if (prelude.type === 'Raw') return prelude.value.split(',').map((s) => s.trim().toLowerCase()).filter(Boolean);
  const out: string[] = [];
  for (const sel of prelude.children) {
    try {
      out.push(csstree.generate(sel).toLowerCase());
    } catch {
      // a selector the generator cannot print is of no use to us
    }
  }
  return out;
}

/** The text of a String or Identifier sequence: a font family name in a font-family list. */
export function familyList(nodes: csstree.CssNode[]): string[] {
  const families: string[] = [];
  let words: string[] = [];
  const flush = () => {
    if (words.length) families.push(words.join(' '));
    words = [];
  };
  for (const n of nodes) {
    if (n.type === 'String') words.push(n.value.trim());
    else if (n.type === 'Identifier') words.push(n.name);
    else if (n.type === 'Operator' && n.value === ',') flush();
    else return families.concat(words.length ? [words.join(' ')] : []).filter(Boolean);
  }
  flush();
  return families.filter(Boolean);
}

function fontFaceOf(block: csstree.Block, base: string, provider: FontProvider | null): FontFace | null {
  let family = '';
  const sources: FontFace['sources'] = [];
  for (const d of declsOf(block)) {
    if (d.property === 'font-family') family = familyList(d.nodes)[0] ?? '';
    if (d.property !== 'src') continue;
    let current: { url: string; format: string | null } | null = null;
    for (const n of d.nodes) {
      if (n.type === 'Url') {
        const url = absolute(n.value, base);
        current = url && !url.startsWith('data:') ? { url, format: null } : null;
        if (current) sources.push(current);
      } else if (n.type === 'Function' && n.name.toLowerCase() === 'format' && current) {
        const arg = n.children.first;
        current.format = arg?.type === 'String' ? arg.value : arg?.type === 'Identifier' ? arg.name : null;
      } else if (n.type === 'Operator' && n.value === ',') current = null;
    }
  }
  return family ? { family, sources, provider } : null;
}

function importUrl(prelude: csstree.AtrulePrelude | csstree.Raw | null, base: string): string | null {
  if (!prelude) return null;
  if (prelude.type === 'Raw') {
    const m = /^\s*(?:url\(\s*)?["']?([^"')\s]+)/i.exec(prelude.value);
    return m?.[1] ? absolute(m[1], base) : null;
  }
  const first = prelude.children.toArray().find((n) => n.type !== 'WhiteSpace');
  if (first?.type === 'Url' || first?.type === 'String') return absolute(first.value, base);
  return null;
}

/**
 * Reads a stylesheet with css-tree (which recovers from errors as browsers do): style rules with
 * their selectors and declarations, @font-face rules, and @import URLs. Rules inside @media,
 * @supports and @layer count, except print, dark-scheme and forced-colour ones.
 */
export function parseCss(text: string, baseUrl: string, provider: FontProvider | null = null): ParsedCss {
  const parsed: ParsedCss = { rules: [], fontFaces: [], imports: [] };
  let ast: csstree.CssNode;
  try {
    ast = csstree.parse(text, { parseValue: true, parseCustomProperty: false, onParseError: () => undefined });
  } catch {
    return parsed;
  }
  const visit = (list: csstree.List<csstree.CssNode>, depth: number) => {
    for (const node of list) {
      if (node.type === 'Rule' && node.block) {
        parsed.rules.push({ selectors: selectorsOf(node.prelude), decls: declsOf(node.block), inline: false });
      } else if (node.type === 'Atrule') {
        const name = node.name.toLowerCase();
        if (name === 'import') {
          const url = importUrl(node.prelude, baseUrl);
          if (url) parsed.imports.push(url);
        } else if (name === 'font-face' && node.block) {
          const face = fontFaceOf(node.block, baseUrl, provider);
          if (face) parsed.fontFaces.push(face);
        } else if (['media', 'supports', 'layer', 'container', 'document'].includes(name) && node.block && depth < 8) {
          const prelude = node.prelude ? csstree.generate(node.prelude) : '';
          if (name === 'media' && SKIPPED_MEDIA.test(prelude)) continue;
          visit(node.block.children, depth + 1);
        }
      }
    }
  };
  if (ast.type === 'StyleSheet') visit(ast.children, 0);
  return parsed;
}

/** A style="" attribute as a rule without selectors. */
export function parseStyleAttribute(text: string): StyleRule | null {
  try {
    const ast = csstree.parse(text, { context: 'declarationList', parseValue: true, parseCustomProperty: false, onParseError: () => undefined });
    if (ast.type !== 'DeclarationList') return null;
    const block: csstree.Block = { type: 'Block', children: ast.children };
    const decls = declsOf(block);
    return decls.length ? { selectors: [], decls, inline: true } : null;
  } catch {
    return null;
  }
}

/** Custom properties a page defines: root-level definitions win over those scoped to elements. */
export function customProperties(rules: StyleRule[]): Map<string, Decl> {
  const root = new Map<string, Decl>();
  const scoped = new Map<string, Decl>();
  for (const rule of rules) {
    const global = rule.selectors.some((s) => /^(:root|html|body|\*|:host)$/.test(s));
    for (const d of rule.decls) {
      if (!d.property.startsWith('--')) continue;
      if (global) root.set(d.property, d);
      else if (!scoped.has(d.property)) scoped.set(d.property, d);
    }
  }
  for (const [k, v] of scoped) if (!root.has(k)) root.set(k, v);
  return root;
}

/** Most nodes one value may expand to: var() chains can fan out exponentially otherwise. */
const EXPANSION_BUDGET = 1000;

/**
 * A value's nodes with every var() replaced by the custom property's value (or the fallback),
 * followed through chains of properties up to a small depth and a bounded number of nodes.
 */
/** Custom properties by name (a Map, or a rule's own definitions over the page's). */
export type Vars = Pick<Map<string, Decl>, 'get'>;

export function expandVars(nodes: csstree.CssNode[], vars: Vars, depth = 0, budget = { left: EXPANSION_BUDGET }): csstree.CssNode[] {
  if (depth > 8) return [];
  const out: csstree.CssNode[] = [];
  for (const n of nodes) {
    if (budget.left-- <= 0) break;
    if (n.type !== 'Function' || n.name.toLowerCase() !== 'var') {
      out.push(n);
      continue;
    }
    const args = n.children.toArray();
    const name = args[0]?.type === 'Identifier' ? args[0].name : null;
    const def = name ? vars.get(name) : undefined;
    if (def) {
      out.push(...expandVars(def.nodes, vars, depth + 1, budget));
      continue;
    }
    const comma = args.findIndex((a) => a.type === 'Operator' && a.value === ',');
    if (comma < 0) continue;
    const rest = args.slice(comma + 1);
    const fallback = rest.length === 1 && rest[0]?.type === 'Raw' ? parseValueNodes(rest[0].value.trim()) : rest.filter((a) => a.type !== 'WhiteSpace');
    out.push(...expandVars(fallback, vars, depth + 1, budget));
  }
  return out;
}
