import { cleanTitle, PAGE_WORDS, SEPARATORS, type NameSignal } from './html.js';

/**
 * The site's name, picked by agreement: every place that may name the site (meta names, the web
 * app manifest, the parts of the <title>, the wordmark and logo text in the header, the first
 * heading, the domain) gives a candidate with a weight; candidates that read the same once cleaned
 * ("Widgetry 5", "Quark Documentation", "Nova by Studio Ten", "Lumen Logo") add up, and the
 * heaviest wins. So a publisher's og:site_name loses to the wordmark, logo and title that agree,
 * and a bare domain title gives way to the name the page shows.
 */

export interface NameSources {
  title: string | null;
  metas: Map<string, string>;
  manifest: { name: string | null; shortName: string | null } | null;
  signals: NameSignal[];
  hostname: string;
}

const WEIGHT: Record<NameSignal['kind'], number> = { wordmark: 2.5, logo_text: 2.5, heading: 1 };

/** Words that describe what a site is, not what it is called, when they trail the name. */
const DESCRIPTIVE =
  /\s+(?:(?:a|an|the|official|free|open[- ]source|responsive|modern|lightweight|css|js|javascript|typescript|html5?|ui|web|front[- ]?end|tailwind(?: css)?|bootstrap(?: \d+)?|landing|one[- ]page)\s+)*(?:documentation|docs|framework|library|toolkit|home ?page|web ?site|landing page|template|theme|demo|starter|project|reference|api reference|guide|manual|blog|logo)$/i;
const DOMAIN = /^[a-z0-9-]+(\.[a-z0-9-]+)*\.[a-z]{2,}$/i;
/** A version label ("1.0.0", "v2.3-beta"): never a name. */
const VERSION = /^v?\d+(\.\d+)+([-+.]?[a-z0-9]+)*$/i;
/** Symbols standing alone between words ("HTML5 ★ Boilerplate", "Foo · Bar" once split): decoration, not the name. */
const GLYPHS = /(^|\s)[\p{S}\p{Extended_Pictographic}\u2022\u00b7\u2605\u2606]+(?=\s|$)/gu;

/** A candidate as the site would write its name: no trailing version, author or description. */
export function cleanName(text: string): string | null {
  let t = text.replace(/\s+/g, ' ').trim();
  for (let i = 0; i < 4; i++) {
    const before = t;
    t = t
      .replace(GLYPHS, ' ')
      .replace(/\s+/g, ' ')
      .replace(/^welcome to\s+/i, '')
      .replace(/\s*\([^()]*\)$/, '')
      .replace(/,\s+(a|an|the)\s.*$/i, '')
      .replace(/\s+by\s+\S.*$/i, '')
      .replace(/\s+v?\d+(\.\d+)*(\.x)?$/i, '')
      .replace(DESCRIPTIVE, '')
      .replace(/[\s:|,;.!-]+$/, '')
      .trim();
    if (t === before) break;
  }
  if (!t || PAGE_WORDS.test(t) || VERSION.test(t) || t.length > 60 || t.split(' ').length > 6) return null;
  return t;
}

const keyOf = (t: string) => t.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, '');

interface Group {
  weight: number;
  forms: { text: string; weight: number }[];
  /** Which kinds of source said it ("the <title>", "the wordmark"), in the order they spoke. */
  sources: string[];
  /** A wordmark or logo text said it: the page marks it as its brand. */
  marked: boolean;
}

/** The name picked, what said it, and the strongest name that disagreed (for the kit's warnings). */
export interface NamePick {
  name: string;
  sources: string[];
  rival: { name: string; sources: string[]; share: number } | null;
}

const SIGNAL_SOURCE: Record<NameSignal['kind'], string> = { wordmark: 'the wordmark', logo_text: 'the logo text', heading: 'the first heading' };
const wordsOf = (t: string) => t.split(' ').map(keyOf).filter(Boolean);
const formOf = (g: Group) =>
  // The form written by the heaviest source; an all-capitals form only if there is no other.
  [...g.forms].sort((a, b) => Number(a.text === a.text.toUpperCase()) - Number(b.text === b.text.toUpperCase()) || b.weight - a.weight)[0]!.text.slice(0, 200);

/**
 * Every candidate with its weight; a name the page marks as its brand (wordmark, logo text) also
 * takes the weight of longer candidates that begin with its words: "Harbor & Open Source" and
 * "Harbor Open Source" are Harbor's pages when the header's logo says "Harbor".
 */
export function weighName(src: NameSources): NamePick | null {
  const groups = new Map<string, Group>();
  const add = (text: string | null | undefined, weight: number, source: string) => {
    const name = text ? cleanName(text) : null;
    if (!name) return;
    const key = keyOf(name);
    if (!key) return;
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { weight: 0, forms: [], sources: [], marked: false }));
    g.weight += weight;
    g.forms.push({ text: name, weight });
    if (!g.sources.includes(source)) g.sources.push(source);
    if (source === SIGNAL_SOURCE.wordmark || source === SIGNAL_SOURCE.logo_text) g.marked = true;
  };
  const m = src.metas;
  add(m.get('og:site_name'), 3, 'og:site_name');
  add(m.get('application-name'), 3, 'application-name');
  add(m.get('apple-mobile-web-app-title'), 2, 'apple-mobile-web-app-title');
  add(src.manifest?.name, 2, 'the web app manifest');
  add(src.manifest?.shortName, 1.5, 'the web app manifest');
  const title = (src.title ?? '').replace(/\s+/g, ' ').trim();
  if (title) {
    if (DOMAIN.test(title)) {
      // A title that is only the domain: its first label is a weak name, the domain weaker still.
      add(title.replace(/^www\./i, '').split('.')[0], 1, 'the <title>');
      add(title, 0.9, 'the <title>');
    } else {
      const main = cleanTitle(title, src.hostname);
      add(main, 3, 'the <title>');
      for (const part of title.split(SEPARATORS)) if (part.trim() !== main) add(part, 1, 'the <title>');
    }
  }
  for (const s of src.signals) add(s.text, WEIGHT[s.kind], SIGNAL_SOURCE[s.kind]);
  if (!/^[\d.]+$|^\[|^localhost$/i.test(src.hostname)) add(src.hostname.replace(/^www\./i, '').split('.')[0], 1, 'the domain');
  const all = [...groups.values()];
  const scored = all.map((g) => {
    let support = 0;
    if (g.marked) {
      const words = wordsOf(formOf(g));
      for (const other of all) {
        const longer = wordsOf(formOf(other));
        if (other !== g && longer.length > words.length && words.every((w, i) => longer[i] === w)) support += other.weight;
      }
    }
    return { g, score: g.weight + support };
  });
  scored.sort((a, b) => b.score - a.score);
  const [best, next] = scored;
  if (!best) return null;
  return {
    name: formOf(best.g),
    sources: best.g.sources,
    rival: next ? { name: formOf(next.g), sources: next.g.sources, share: next.score / best.score } : null,
  };
}

export function pickName(src: NameSources): string | null {
  return weighName(src)?.name ?? null;
}
