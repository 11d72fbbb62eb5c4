/**
 * The phases of a run as the API process's workers time them (`toolrun_run_phase_seconds` on
 * GET /metrics): scraped before and after a run, the difference of each phase's sum is that run's.
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
