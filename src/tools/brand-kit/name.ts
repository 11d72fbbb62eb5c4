import { cleanTitle, type NameSignal } from './html.js';

/**
 * The site's name, picked by agreement: every place that may name the site (meta names, the web
 * app manifest, the parts of the <title>, the wordmark and logo text in the header, the first
 * heading, the domain) gives a candidate with a weight; candidates that read the same once cleaned
 * ("CodeMirror 5", "Quark Documentation", "Nova by Studio Ten", "Lumen Logo") add up, and the
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
const GENERIC = /^(home|homepage|home page|welcome|index|start|official site|official website|logo|menu|docs|documentation)$/i;

/** A candidate as the site would write its name: no trailing version, author or description. */
export function cleanName(text: string): string | null {
  let t = text.replace(/\s+/g, ' ').trim();
  for (let i = 0; i < 4; i++) {
    const before = t;
    t = t
      .replace(/^welcome to\s+/i, '')
      .replace(/\s+by\s+\S.*$/i, '')
      .replace(/\s+v?\d+(\.\d+)*(\.x)?$/i, '')
      .replace(DESCRIPTIVE, '')
      .replace(/[\s:|,;.!-]+$/, '')
      .trim();
    if (t === before) break;
  }
  if (!t || GENERIC.test(t) || t.length > 60 || t.split(' ').length > 6) return null;
  return t;
}

const keyOf = (t: string) => t.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, '');

export function pickName(src: NameSources): string | null {
  const groups = new Map<string, { weight: number; forms: { text: string; weight: number }[] }>();
  const add = (text: string | null | undefined, weight: number) => {
    const name = text ? cleanName(text) : null;
    if (!name) return;
    const key = keyOf(name);
    if (!key) return;
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { weight: 0, forms: [] }));
    g.weight += weight;
    g.forms.push({ text: name, weight });
  };
  const m = src.metas;
  add(m.get('og:site_name'), 3);
  add(m.get('application-name'), 3);
  add(m.get('apple-mobile-web-app-title'), 2);
  add(src.manifest?.name, 2);
  add(src.manifest?.shortName, 1.5);
  const title = (src.title ?? '').replace(/\s+/g, ' ').trim();
  if (title) {
    if (DOMAIN.test(title)) {
      // A title that is only the domain: its first label is a weak name, the domain weaker still.
      add(title.replace(/^www\./i, '').split('.')[0], 1);
      add(title, 0.9);
    } else {
      const main = cleanTitle(title, src.hostname);
      add(main, 3);
      for (const part of title.split(/\s+[|\u2013\u2014\u00b7:\u2022»-]\s+/)) if (part.trim() !== main) add(part, 1);
    }
  }
  for (const s of src.signals) add(s.text, WEIGHT[s.kind]);
  if (!/^[\d.]+$|^\[|^localhost$/i.test(src.hostname)) add(src.hostname.replace(/^www\./i, '').split('.')[0], 1);
  let best: { weight: number; forms: { text: string; weight: number }[] } | null = null;
  for (const g of groups.values()) if (!best || g.weight > best.weight) best = g;
  if (!best) return null;
  // The form written by the heaviest source; an all-capitals form only if there is no other.
  const forms = [...best.forms].sort((a, b) => Number(a.text === a.text.toUpperCase()) - Number(b.text === b.text.toUpperCase()) || b.weight - a.weight);
  return forms[0]!.text.slice(0, 200);
}
