import { Cascade, type Element } from './cascade.js';
import { expandVars, type Decl, type StyleRule } from './css.js';
import type { ColorTally } from './palette.js';
import { colorsIn } from './palette.js';

/**
 * Where colours are used on the page itself: the background of its buttons and call-to-action
 * links and of its header and navigation, and the colour of its links, each read from the cascade
 * on the element (so utility classes count: `<a class="bg-purple-700">`). What a page shows weighs
 * more than what its stylesheets could show.
 */

const MAX_ELEMENTS = 80;
const BG = ['background-color', 'background'];
const BUTTONISH = /(^|[\s_-])(btn|button|cta)([\s_-]|$)/i;
const NAVISH = /(^|[\s_-])(navbar|header|masthead|topbar)([\s_-]|$)/i;

type Node = { tagName?: string; attrs?: { name: string; value: string }[]; childNodes?: Node[] };

const attr = (el: Element, name: string) => el.attrs.find((a) => a.name === name)?.value ?? '';

interface Found {
  buttons: Element[];
  bars: Element[];
  links: Element[];
  /** A heading or brand-marked element inside a bar, with the bar: the wordmark. */
  wordmarks: { el: Element; bar: Element }[];
}
const BRAND = /(^|[\s_-])(brand|logo|wordmark|site-?title|site-?name)([\s_-]|$)/i;

/** Whether an element shows text of its own (a wordmark), not only an image. */
function hasText(el: Element): boolean {
  const stack: Node[] = [...((el as unknown as Node).childNodes ?? [])];
  for (let seen = 0; stack.length && seen < 200; seen++) {
    const n = stack.pop()! as Node & { nodeName?: string; value?: string };
    if (n.nodeName === '#text' && (n.value ?? '').trim()) return true;
    if (n.tagName !== 'svg') stack.push(...(n.childNodes ?? []));
  }
  return false;
}

function collect(root: Node): Found {
  const found: Found = { buttons: [], bars: [], links: [], wordmarks: [] };
  const stack: { n: Node; bar: Element | null }[] = [{ n: root, bar: null }];
  let seen = 0;
  while (stack.length && seen < 5000) {
    const { n, bar: outer } = stack.pop()!;
    let bar = outer;
    seen++;
    if (n.tagName) {
      const el = n as unknown as Element;
      const tag = el.tagName;
      if (tag === 'svg' || tag === 'script' || tag === 'template' || tag === 'noscript') continue;
      const cls = attr(el, 'class');
      const type = attr(el, 'type').toLowerCase();
      if (tag === 'button' || (tag === 'input' && (type === 'submit' || type === 'button')) || ((tag === 'a' || tag === 'span' || tag === 'div') && BUTTONISH.test(cls))) {
        if (found.buttons.length < MAX_ELEMENTS) found.buttons.push(el);
      } else if (tag === 'a') {
        if (found.links.length < MAX_ELEMENTS) found.links.push(el);
      }
      if (tag === 'header' || tag === 'nav' || NAVISH.test(cls) || /^(nav|header)$/i.test(attr(el, 'id'))) {
        if (found.bars.length < 10) found.bars.push(el);
        bar ??= el;
      } else if (outer && (tag === 'h1' || BRAND.test(cls) || BRAND.test(attr(el, 'id'))) && hasText(el) && found.wordmarks.length < 5) {
        found.wordmarks.push({ el, bar: outer });
      }
    }
    const kids = n.childNodes ?? [];
    for (let i = kids.length - 1; i >= 0; i--) stack.push({ n: kids[i]!, bar });
  }
  return found;
}

function colorOf(cascade: Cascade, el: Element, props: string[], vars: Map<string, Decl>): string | null {
  const d = cascade.winner(el, props);
  if (!d) return null;
  const colors = colorsIn(expandVars(d.nodes, vars), vars).filter((c) => c.alpha >= 0.5);
  return colors.length === 1 ? colors[0]!.hex : null;
}

/** The colour a wordmark's text is shown in when something between it and its bar sets one (not the page's text colour). */
function textColorWithin(cascade: Cascade, el: Element, bar: Element, vars: Map<string, Decl>): string | null {
  for (let e: Element | null = el; e; e = e.parentNode && 'tagName' in e.parentNode ? (e.parentNode as Element) : null) {
    if (cascade.winner(e, ['color'])) return colorOf(cascade, e, ['color'], vars);
    if (e === bar) return null;
  }
  return null;
}

/** Tallies the colours the page's buttons, bars and links are shown in (a link in a button's colour counts once). */
export function tallyUsage(tally: ColorTally, document: Element, rules: StyleRule[], vars: Map<string, Decl>): void {
  const { buttons, bars, links, wordmarks } = collect(document as unknown as Node);
  const cascade = new Cascade(rules, new Set([...BG, 'color']));
  // The strength of a hint from use is shared out over the elements of its kind: a colour on every
  // button gets all of it, however many buttons there are, so use weighs like one strong signal.
  const share = (n: number, total: number) => (total ? n / total : 0);
  // A link shown on a background of its own is a button too (utility CSS: <a class="bg-purple-700">).
  const linkBacks = links.map((el) => colorOf(cascade, el, BG, vars));
  const buttonColors = [...buttons.map((el) => colorOf(cascade, el, BG, vars)), ...linkBacks].filter((h): h is string => h !== null);
  for (const hex of buttonColors) tally.add(hex, 1, 'css', { role: 'primary', strength: share(6, buttonColors.length), from: 'the buttons on the page' });
  for (const el of bars) {
    const hex = colorOf(cascade, el, BG, vars);
    if (hex) tally.add(hex, 1, 'css', { role: 'primary', strength: share(3, bars.length), from: 'the header on the page' });
  }
  const marks = wordmarks.map(({ el, bar }) => textColorWithin(cascade, el, bar, vars)).filter((h): h is string => h !== null);
  for (const hex of marks) tally.add(hex, 1, 'css', { role: 'primary', strength: share(4, marks.length), from: 'the wordmark' });
  for (const [i, el] of links.entries()) {
    if (linkBacks[i]) continue;
    const hex = colorOf(cascade, el, ['color'], vars);
    if (hex) {
      tally.add(hex, 0.2, 'css', { role: 'accent', strength: share(2, links.length), from: 'the links on the page' });
      tally.add(hex, 0, 'css', { role: 'primary', strength: share(0.5, links.length), from: 'the links on the page' });
    }
  }
}
