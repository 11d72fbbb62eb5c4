import * as csstree from 'css-tree';
import type { DefaultTreeAdapterMap } from 'parse5';
import { parseStyleAttribute, type Decl, type StyleRule } from './css.js';

export type Element = DefaultTreeAdapterMap['element'];

/**
 * The cascade as a browser resolves it, for the few elements a brand kit asks about (body, the
 * headings, buttons, links, the header): which declarations of a property match an element, the
 * winner by importance, specificity and order, and inheritance from the parent. Selectors are
 * matched on the page's parse5 tree; states a static page is never in (:hover, :focus, ::before)
 * match nothing, and pseudo-classes we do not model match nothing either.
 */

type Simple = csstree.CssNode;
interface Step {
  compound: Simple[];
  /** How this compound relates to the one on its right (null for the rightmost). */
  combinator: string | null;
}
interface Compiled {
  steps: Step[];
  specificity: number;
}

const compiledCache = new Map<string, Compiled | null>();

function specificityOf(nodes: Simple[]): [number, number, number] {
  const s: [number, number, number] = [0, 0, 0];
  for (const n of nodes) {
    if (n.type === 'IdSelector') s[0]++;
    else if (n.type === 'ClassSelector' || n.type === 'AttributeSelector') s[1]++;
    else if (n.type === 'TypeSelector' && n.name !== '*') s[2]++;
    else if (n.type === 'PseudoElementSelector') s[2]++;
    else if (n.type === 'PseudoClassSelector') {
      const name = n.name.toLowerCase();
      if (name === 'where') continue;
      if (['is', 'not', 'matches', 'has'].includes(name) && n.children) {
        let best: [number, number, number] = [0, 0, 0];
        for (const list of n.children) {
          if (list.type !== 'SelectorList') continue;
          for (const sel of list.children) {
            if (sel.type !== 'Selector') continue;
            const x = specificityOf(sel.children.toArray());
            if (x[0] * 1e6 + x[1] * 1e3 + x[2] > best[0] * 1e6 + best[1] * 1e3 + best[2]) best = x;
          }
        }
        s[0] += best[0];
        s[1] += best[1];
        s[2] += best[2];
      } else s[1]++;
    }
  }
  return s;
}

function compile(selector: string): Compiled | null {
  if (compiledCache.has(selector)) return compiledCache.get(selector)!;
  let out: Compiled | null = null;
  try {
    const ast = csstree.parse(selector, { context: 'selector', onParseError: () => undefined });
    if (ast.type === 'Selector') {
      const nodes = ast.children.toArray();
      const steps: Step[] = [];
      let compound: Simple[] = [];
      let pending: string | null = null;
      for (const n of nodes) {
        if (n.type === 'Combinator') {
          steps.push({ compound, combinator: pending });
          compound = [];
          pending = n.name;
        } else compound.push(n);
      }
      steps.push({ compound, combinator: pending });
      // Each step's combinator is the one between it and the step before (to its left).
      const [a, b, c] = specificityOf(nodes);
      out = steps.every((s) => s.compound.length) ? { steps, specificity: a * 1e6 + b * 1e3 + c } : null;
    }
  } catch {
    out = null;
  }
  if (compiledCache.size > 50_000) compiledCache.clear();
  compiledCache.set(selector, out);
  return out;
}

const attr = (el: Element, name: string) => el.attrs.find((a) => a.name === name)?.value ?? null;
const parentOf = (el: Element): Element | null => {
  const p = el.parentNode;
  return p && 'tagName' in p ? (p as Element) : null;
};
const elementSiblings = (el: Element): Element[] => {
  const p = el.parentNode;
  return p ? (p.childNodes.filter((c) => 'tagName' in c) as Element[]) : [el];
};

function matchesList(list: csstree.CssNode, el: Element): boolean {
  if (list.type !== 'SelectorList') return false;
  for (const sel of list.children) {
    if (sel.type !== 'Selector') continue;
    const c = compile(csstree.generate(sel));
    if (c && matchesCompiled(c, el)) return true;
  }
  return false;
}

function matchesSimple(n: Simple, el: Element): boolean {
  switch (n.type) {
    case 'TypeSelector':
      return n.name === '*' || n.name.toLowerCase() === el.tagName.toLowerCase();
    case 'ClassSelector': {
      const cls = (attr(el, 'class') ?? '').toLowerCase().split(/\s+/);
      return cls.includes(n.name.toLowerCase());
    }
    case 'IdSelector':
      return (attr(el, 'id') ?? '').toLowerCase() === n.name.toLowerCase();
    case 'AttributeSelector': {
      const value = attr(el, n.name.name.toLowerCase());
      if (value === null) return false;
      if (!n.matcher || !n.value) return true;
      const want = (n.value.type === 'String' ? n.value.value : n.value.name).toLowerCase();
      const v = value.toLowerCase();
      switch (n.matcher) {
        case '=':
          return v === want;
        case '~=':
          return v.split(/\s+/).includes(want);
        case '|=':
          return v === want || v.startsWith(`${want}-`);
        case '^=':
          return v.startsWith(want);
        case '$=':
          return v.endsWith(want);
        case '*=':
          return v.includes(want);
        default:
          return false;
      }
    }
    case 'PseudoClassSelector': {
      const name = n.name.toLowerCase();
      const arg = n.children?.first ?? null;
      if (name === 'root') return el.tagName === 'html';
      if (['is', 'where', 'matches', '-webkit-any', '-moz-any'].includes(name)) return !!arg && matchesList(arg, el);
      if (name === 'not') return !!arg && !matchesList(arg, el);
      if (name === 'first-child') return elementSiblings(el)[0] === el;
      if (name === 'last-child') return elementSiblings(el).at(-1) === el;
      if (name === 'link' || name === 'any-link') return el.tagName === 'a' && attr(el, 'href') !== null;
      return false;
    }
    default:
      return false;
  }
}

function matchesCompound(compound: Simple[], el: Element): boolean {
  return compound.every((n) => matchesSimple(n, el));
}

function matchesCompiled(c: Compiled, el: Element): boolean {
  const steps = c.steps;
  const at = (i: number, e: Element): boolean => {
    const step = steps[i]!;
    if (!matchesCompound(step.compound, e)) return false;
    if (i === 0) return true;
    switch (step.combinator) {
      case '>': {
        const p = parentOf(e);
        return !!p && at(i - 1, p);
      }
      case '+': {
        const sib = elementSiblings(e);
        const prev = sib[sib.indexOf(e) - 1];
        return !!prev && at(i - 1, prev);
      }
      case '~': {
        const sib = elementSiblings(e);
        return sib.slice(0, sib.indexOf(e)).some((s) => at(i - 1, s));
      }
      default: {
        for (let p = parentOf(e); p; p = parentOf(p)) if (at(i - 1, p)) return true;
        return false;
      }
    }
  };
  return at(steps.length - 1, el);
}

interface Candidate {
  decl: Decl;
  specificity: number;
  order: number;
  important: boolean;
}

/**
 * The rules that set some properties, indexed by the rightmost compound's id, class or tag (as
 * browsers index them), so asking about one element does not walk every rule of a 3 MB sheet.
 */
export class Cascade {
  private readonly byKey = new Map<string, { selector: string; rule: number }[]>();
  private readonly styleCache = new Map<Element, StyleRule | null>();

  constructor(
    private readonly rules: StyleRule[],
    private readonly properties: Set<string>,
  ) {
    rules.forEach((rule, i) => {
      if (rule.inline || !rule.decls.some((d) => properties.has(d.property))) return;
      for (const selector of rule.selectors) {
        const c = compile(selector);
        if (!c) continue;
        const last = c.steps.at(-1)!.compound;
        const id = last.find((n) => n.type === 'IdSelector');
        const cls = last.find((n) => n.type === 'ClassSelector');
        const tag = last.find((n) => n.type === 'TypeSelector' && n.name !== '*');
        const key = id && id.type === 'IdSelector' ? `#${id.name}` : cls && cls.type === 'ClassSelector' ? `.${cls.name}` : tag && tag.type === 'TypeSelector' ? tag.name : '*';
        let list = this.byKey.get(key);
        if (!list) this.byKey.set(key, (list = []));
        list.push({ selector, rule: i });
      }
    });
  }

  private keysOf(el: Element): string[] {
    const keys = ['*', el.tagName.toLowerCase()];
    const id = attr(el, 'id');
    if (id) keys.push(`#${id.toLowerCase()}`);
    for (const c of (attr(el, 'class') ?? '').toLowerCase().split(/\s+/)) if (c) keys.push(`.${c}`);
    return keys;
  }

  private styleOf(el: Element): StyleRule | null {
    if (!this.styleCache.has(el)) {
      const text = attr(el, 'style');
      this.styleCache.set(el, text ? parseStyleAttribute(text) : null);
    }
    return this.styleCache.get(el) ?? null;
  }

  /** Every declaration of these properties that applies to the element, the winner last. */
  declared(el: Element, props: string[]): Decl[] {
    const found: Candidate[] = [];
    const seen = new Set<string>();
    for (const key of this.keysOf(el)) {
      for (const { selector, rule } of this.byKey.get(key) ?? []) {
        const id = `${rule}\u0000${selector}`;
        if (seen.has(id)) continue;
        seen.add(id);
        const c = compile(selector);
        if (!c || !matchesCompiled(c, el)) continue;
        for (const decl of this.rules[rule]!.decls) {
          if (props.includes(decl.property)) found.push({ decl, specificity: c.specificity, order: rule, important: decl.important });
        }
      }
    }
    const inline = this.styleOf(el);
    for (const decl of inline?.decls ?? []) if (props.includes(decl.property)) found.push({ decl, specificity: 1e9, order: Number.MAX_SAFE_INTEGER, important: decl.important });
    // A rule's own declarations keep their order: a later one in the same rule wins.
    found.sort((a, b) => Number(a.important) - Number(b.important) || a.specificity - b.specificity || a.order - b.order);
    return found.map((f) => f.decl);
  }

  /** The winning declaration of these properties on the element, or null. */
  winner(el: Element, props: string[]): Decl | null {
    return this.declared(el, props).at(-1) ?? null;
  }
}

export function parentElement(el: Element): Element | null {
  return parentOf(el);
}
