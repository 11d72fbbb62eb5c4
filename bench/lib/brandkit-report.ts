/**
 * bench:brandkit's tables: per site (each check, the score before and now in each mode), per
 * check class (right of scored, per folder and mode), and the misses with what the kit said.
 */
import { CHECKS, passed, scored, type Check, type SiteScore } from './brandkit-sites.js';
import { table } from './report.js';

export type Mode = 'static' | 'render';

/** One folder's results in one mode. */
export interface SetResult {
  scores: SiteScore[];
  errors: Record<string, string>;
  seconds: number[];
}

export const total = (scores: SiteScore[]) => scores.reduce((n, s) => n + passed(s), 0);
export const possible = (scores: SiteScore[]) => scores.reduce((n, s) => n + scored(s), 0);
const mark = (v: boolean | null) => (v === null ? '-' : v ? 'ok' : 'x');

/** Right of scored, for one check class. */
export function classScore(scores: SiteScore[], check: Check): { right: number; of: number } {
  return { right: scores.filter((s) => s.checks[check] === true).length, of: scores.filter((s) => s.checks[check] !== null).length };
}

/** Per site: each check in static mode (ok / x / - when the truth is null), the score before and in each mode. */
export function siteTable(staticRun: SetResult, render: SetResult | null, before: Partial<Record<Mode, Record<string, number>>>, renderNote: string | null): string {
  const rows = staticRun.scores.map((s, i) => {
    const r = render?.scores[i];
    const was = (mode: Mode) => (before[mode]?.[s.site] === undefined ? '-' : `${before[mode]![s.site]}/${scored(s)}`);
    return [s.site, ...CHECKS.map((c) => mark(s.checks[c])), was('static'), `${passed(s)}/${scored(s)}`, was('render'), r ? `${passed(r)}/${scored(r)}` : 'not available'];
  });
  const sum = (mode: Mode) => {
    const b = before[mode];
    return b ? `${Object.values(b).reduce((a, x) => a + x, 0)}/${possible(staticRun.scores)}` : '-';
  };
  rows.push(['total', ...CHECKS.map((c) => String(classScore(staticRun.scores, c).right)), sum('static'), `${total(staticRun.scores)}/${possible(staticRun.scores)}`,
    sum('render'), render ? `${total(render.scores)}/${possible(render.scores)}` : 'not available']);
  const out = table(['site', ...CHECKS, 'static before', 'static', 'render before', 'render'], rows);
  return renderNote ? `${out}\nrender: not available (${renderNote})` : out;
}

/** Per check class: right of scored in each folder and mode. */
export function classTable(sets: { name: string; static: SetResult; render: SetResult | null }[]): string {
  const rows = CHECKS.map((c) => [c, ...sets.flatMap((s) => [s.static, s.render].map((r) => (r ? `${classScore(r.scores, c).right}/${classScore(r.scores, c).of}` : '-')))]);
  rows.push(['all', ...sets.flatMap((s) => [s.static, s.render].map((r) => (r ? `${total(r.scores)}/${possible(r.scores)}` : '-')))]);
  return table(['check', ...sets.flatMap((s) => [`${s.name} static`, `${s.name} render`])], rows);
}

/** Classes (folder and check) where the render mode is right less often than the static reader. */
export function renderBehind(sets: { name: string; static: SetResult; render: SetResult | null }[]): string[] {
  const out: string[] = [];
  for (const s of sets) {
    if (!s.render) continue;
    for (const c of CHECKS) if (classScore(s.render.scores, c).right < classScore(s.static.scores, c).right) out.push(`${s.name} ${c}`);
  }
  return out;
}

/** What each kit said where it missed, for diagnosis. */
export function missTable(label: string, result: SetResult): string {
  const rows = result.scores.flatMap((s) => CHECKS.filter((c) => s.checks[c] === false).map((c) => [s.site, c, s.got[c] ?? 'null']));
  for (const [site, err] of Object.entries(result.errors)) rows.push([site, 'run', err]);
  if (!rows.length) return `${label}: no misses`;
  return table(['site', 'check', `${label}: the kit said`], rows);
}
