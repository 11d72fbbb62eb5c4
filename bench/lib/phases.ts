/**
 * The phases of a run as the API process's workers time them (`toolrun_run_phase_seconds` on
 * GET /metrics): scraped before and after a run, the difference of each phase's sum is that run's;
 * and what a run costs beyond its runner, taken in paired rounds against the runner called
 * directly and split into those phases.
 */
import type { RunPhase } from '../../src/metrics/metrics.js';

export const PHASES: RunPhase[] = ['inputs', 'runner', 'store', 'commit', 'check'];

export type PhaseTotals = Record<RunPhase, { seconds: number; count: number }>;

const SERIES = /^toolrun_run_phase_seconds_(sum|count)\{([^}]*)\} (\S+)$/;

function labels(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of text.matchAll(/(\w+)="([^"]*)"/g)) out[m[1]!] = m[2]!;
  return out;
}

export async function scrapePhases(base: string, token: string, tool: string): Promise<PhaseTotals> {
  const res = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}: ${text.slice(0, 200)}`);
  const totals = Object.fromEntries(PHASES.map((p) => [p, { seconds: 0, count: 0 }])) as PhaseTotals;
  for (const line of text.split('\n')) {
    const m = SERIES.exec(line);
    if (!m) continue;
    const l = labels(m[2]!);
    const phase = l.phase as RunPhase | undefined;
    if (l.tool !== tool || !phase || !(phase in totals)) continue;
    if (m[1] === 'sum') totals[phase].seconds = Number(m[3]);
    else totals[phase].count = Number(m[3]);
  }
  return totals;
}

/** Each phase's seconds between two scrapes. */
export function phaseDelta(before: PhaseTotals, after: PhaseTotals): Record<RunPhase, number> {
  return Object.fromEntries(PHASES.map((p) => [p, after[p].seconds - before[p].seconds])) as Record<RunPhase, number>;
}

/** Scrapes until the check phase has been recorded once more than in `before` (it ends just after the check commits). */
export async function scrapeAfterCheck(base: string, token: string, tool: string, before: PhaseTotals): Promise<PhaseTotals> {
  for (let i = 0; ; i++) {
    const now = await scrapePhases(base, token, tool);
    if (now.check.count > before.check.count || i >= 100) return now;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A difference in whole ms with its sign: +12, -3. */
export const signedMs = (x: number) => (Number.isFinite(x) ? `${x >= 0 ? '+' : ''}${x.toFixed(0)}` : '-');

/** The median, lowest and highest of per-round differences; `diffs` in round order. */
export interface Paired {
  median: number;
  min: number;
  max: number;
  diffs: number[];
}

/**
 * Per round a - b, then the median of those differences. Both sides of a round ran back to back,
 * so whatever slowed the machine for a while (the other engineer's benchmark, a page-cache flush)
 * weighs on both and cancels out; a difference of two medians taken from different rounds would
 * keep it.
 */
export function paired(rounds: { a: number; b: number }[]): Paired {
  const diffs = rounds.map((r) => r.a - r.b);
  const finite = diffs.filter(Number.isFinite).sort((x, y) => x - y);
  const mid = Math.floor(finite.length / 2);
  const median = !finite.length ? Number.NaN : finite.length % 2 ? finite[mid]! : (finite[mid - 1]! + finite[mid]!) / 2;
  return { median, min: finite[0] ?? Number.NaN, max: finite[finite.length - 1] ?? Number.NaN, diffs };
}

/** One API run of a paired round, in ms: the run's own timestamps and the phases its worker timed. */
export interface ApiRound {
  /** runs.created_at -> finished_at (PostgreSQL now() of the start transaction and of the success transaction's BEGIN). */
  ms: number;
  /** runs.created_at -> started_at: the NOTIFY that wakes a worker and its claim. */
  queueMs: number;
  /** Seconds per phase, as GET /metrics counts them (phaseDelta). */
  phases: Record<RunPhase, number>;
}

/**
 * One paired round, in ms: vsDirect = api - direct = engine + runnerDelta. engine (the fixed cost
 * per run) is the part of the API's interval outside its own runner call (queue, inputs, store,
 * rest), all measured within the one run; runnerDelta is the same runner on the same input in
 * the API process against the direct process, which only the machine's noise (or contention
 * inside the API process) moves.
 */
export interface FixedParts {
  vsDirect: number;
  queue: number;
  inputs: number;
  store: number;
  /** API interval minus queue, inputs, runner and store: the claim's answer to launch, the work directory, the success transaction up to its BEGIN. */
  rest: number;
  engine: number;
  runnerDelta: number;
  /** After finished_at, not in the interval: the rest of the success transaction, then the output check. */
  commit: number;
  check: number;
}

export function fixedParts(api: ApiRound, directMs: number): FixedParts {
  const s = (p: RunPhase) => 1000 * api.phases[p];
  const runner = s('runner');
  const rest = api.ms - api.queueMs - s('inputs') - runner - s('store');
  return {
    vsDirect: api.ms - directMs,
    queue: api.queueMs,
    inputs: s('inputs'),
    store: s('store'),
    rest,
    engine: api.ms - runner,
    runnerDelta: runner - directMs,
    commit: s('commit'),
    check: s('check'),
  };
}

/** Each part's median over the rounds (the parts' medians need not add up to the median of vsDirect). */
export function medianParts(rounds: FixedParts[]): FixedParts {
  const m = (k: keyof FixedParts) => paired(rounds.map((r) => ({ a: r[k], b: 0 }))).median;
  return { vsDirect: m('vsDirect'), queue: m('queue'), inputs: m('inputs'), store: m('store'), rest: m('rest'), engine: m('engine'),
    runnerDelta: m('runnerDelta'), commit: m('commit'), check: m('check') };
}
