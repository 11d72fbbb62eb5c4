/**
 * bench:scale's plans: the project's own statements, as its functions send them (captured by a
 * Queryable that records instead of running), EXPLAINed with ANALYZE and BUFFERS on the old
 * database. What docs/decisions.md reasons from when a read grows past its target.
 */
import type pg from 'pg';
import type { Queryable } from '../../src/db/pool.js';
import { getTeamRunDetail, listTeamRuns, teamLedger, usageByDay, usageByTool } from '../../src/console/runs-view.js';
import { listApiRuns, runsThisHour } from '../../src/runs/repository.js';
import { deliveriesPage } from '../../src/webhooks/admin.js';
import { nestedPlans, planOutline } from './nested-plans.js';
import type { SeedTarget } from './scale-seed.js';

interface Captured {
  text: string;
  values: unknown[];
}

/** A Queryable that keeps the statement it is given and answers with no rows. */
function recorder(): { db: Queryable; last: () => Captured } {
  let captured: Captured | null = null;
  const query = (text: unknown, values?: unknown) => {
    captured = { text: String(text), values: Array.isArray(values) ? values : [] };
    return Promise.resolve({ rows: [], rowCount: 0, command: 'SELECT', oid: 0, fields: [] });
  };
  return {
    db: { query } as unknown as Queryable,
    last: () => {
      if (!captured) throw new Error('nothing was queried');
      return captured;
    },
  };
}

export interface Plan {
  name: string;
  /** The plan's Execution Time. */
  ms: number;
  plan: string;
}

/** EXPLAIN (ANALYZE, BUFFERS) of the reads whose cost could grow with the team's past. */
export async function explainHeaviest(pool: pg.Pool, t: SeedTarget): Promise<Plan[]> {
  const newest = (await pool.query<{ id: string }>('SELECT id FROM runs WHERE team_id = $1::uuid ORDER BY created_at DESC, id DESC LIMIT 1', [t.teamId])).rows[0]?.id ?? '';
  const r = recorder();
  const cases: [string, () => Promise<unknown>][] = [
    ['v1 runs (listApiRuns)', () => listApiRuns(r.db, t.teamId, { limit: 20 })],
    ['v1 runs, status=failed', () => listApiRuns(r.db, t.teamId, { status: 'failed', limit: 20 })],
    ['v1 runs, tool_id=video_transition', () => listApiRuns(r.db, t.teamId, { toolId: 'video_transition', limit: 20 })],
    ['v1 runs, status=running', () => listApiRuns(r.db, t.teamId, { status: 'running', limit: 20 })],
    ['v1 runs, tool_id=bench_noop (seldom used)', () => listApiRuns(r.db, t.teamId, { toolId: 'bench_noop', limit: 20 })],
    ['v1 runs, created_before 100 days ago', () => listApiRuns(r.db, t.teamId, { createdBefore: new Date(Date.now() - 100 * 86_400_000).toISOString(), limit: 20 })],
    ['v1 runs, cursor', () => listApiRuns(r.db, t.teamId, { startingAfter: newest, limit: 20 })],
    ['console runs (listTeamRuns)', () => listTeamRuns(r.db, t.teamId, { limit: 25 })],
    ['console runs, status=running', () => listTeamRuns(r.db, t.teamId, { status: 'running', limit: 25 })],
    ['console run (getTeamRunDetail)', () => getTeamRunDetail(r.db, t.teamId, newest)],
    ['console ledger (teamLedger)', () => teamLedger(r.db, t.teamId, { limit: 50 })],
    ['console usage by day (roll-up)', () => usageByDay(r.db, t.teamId)],
    ['console usage by tool (roll-up)', () => usageByTool(r.db, t.teamId)],
    ['runs this hour (start, overview)', () => runsThisHour(r.db, t.teamId)],
    ['webhook deliveries (deliveriesPage)', () => deliveriesPage(r.db, t.endpointId, { limit: 20 })],
  ];
  const plans: Plan[] = [];
  for (const [name, call] of cases) {
    await call();
    plans.push(await explain(pool, name, r.last()));
  }
  plans.push(...(await explainClaim(pool)));
  return plans;
}

async function explain(pool: pg.Pool, name: string, q: Captured): Promise<Plan> {
  const { rows } = await pool.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${q.text}`, q.values);
  const lines = rows.map((x) => x['QUERY PLAN']);
  const ms = Number(/Execution Time: ([\d.]+) ms/.exec(lines.join('\n'))?.[1] ?? Number.NaN);
  return { name, ms, plan: lines.join('\n') };
}

/** The claim's statements (inside toolrun_claim_queued, migration 0025) as it runs them; the claim it makes is rolled back. */
async function explainClaim(pool: pg.Pool): Promise<Plan[]> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const nested = await nestedPlans(client, 'SELECT id FROM toolrun_claim_queued($1::text, $2::integer, 1, 2, 4, 8, 8)', ['bench-explain', 60], { analyze: true });
    return nested
      .filter((n) => !/^\s*SELECT id FROM toolrun_claim_queued/.test(n.query))
      .map((n) => ({ name: `claim: ${n.query.trim().split(/\s+/).slice(0, 4).join(' ')}`, ms: n.ms ?? Number.NaN, plan: planOutline(n.plan).join('\n') }));
  } finally {
    await client.query('ROLLBACK').catch(() => undefined);
    client.release();
  }
}
