// The Usage page's figures computed from the ledger and the runs themselves: the definition the
// daily roll-up (usage_daily, migration 0022; read by usageByDay/usageByTool in runs-view.ts) must
// equal. Not on any request path (they scan the month: seconds at a million runs); for tests, the
// scale benchmark and an operator's check (usageDrift).
import type { Queryable } from '../db/pool.js';
import { usageByDay, usageByTool, USAGE_DAYS } from './runs-view.js';

/** Sparks spent (charges less refunds, by the day they were booked) and runs started, per UTC day. */
export async function usageByDayFromLedger(db: Queryable, teamId: string): Promise<{ date: string; sparks_spent: number; runs: number }[]> {
  const { rows } = await db.query<{ date: string; sparks_spent: number; runs: number }>(
    `WITH days AS (
       SELECT generate_series(date_trunc('day', now() AT TIME ZONE 'UTC') - make_interval(days => $2::integer - 1),
                              date_trunc('day', now() AT TIME ZONE 'UTC'), interval '1 day') AS day),
     spent AS (
       SELECT date_trunc('day', created_at AT TIME ZONE 'UTC') AS day, -sum(amount)::bigint AS sparks
         FROM ledger_entries
        WHERE team_id = $1::uuid AND kind IN ('charge', 'refund')
          AND created_at >= (date_trunc('day', now() AT TIME ZONE 'UTC') - make_interval(days => $2::integer - 1)) AT TIME ZONE 'UTC'
        GROUP BY 1),
     started AS (
       SELECT date_trunc('day', created_at AT TIME ZONE 'UTC') AS day, count(*)::integer AS n
         FROM runs
        WHERE team_id = $1::uuid
          AND created_at >= (date_trunc('day', now() AT TIME ZONE 'UTC') - make_interval(days => $2::integer - 1)) AT TIME ZONE 'UTC'
        GROUP BY 1)
     SELECT to_char(d.day, 'YYYY-MM-DD') AS date, coalesce(s.sparks, 0)::bigint AS sparks_spent, coalesce(r.n, 0)::integer AS runs
       FROM days d LEFT JOIN spent s ON s.day = d.day LEFT JOIN started r ON r.day = d.day
      ORDER BY d.day`,
    [teamId, USAGE_DAYS],
  );
  return rows;
}

/** Runs started and Sparks spent on them, per tool, over the same days; most runs first. */
export async function usageByToolFromLedger(db: Queryable, teamId: string): Promise<{ tool_id: string; runs: number; sparks_spent: number }[]> {
  const { rows } = await db.query<{ tool_id: string; runs: number; sparks_spent: number }>(
    `SELECT r.tool_id, count(*)::integer AS runs,
            coalesce(-sum((SELECT sum(l.amount) FROM ledger_entries l WHERE l.run_id = r.id AND l.kind IN ('charge', 'refund'))), 0)::bigint AS sparks_spent
       FROM runs r
      WHERE r.team_id = $1::uuid
        AND r.created_at >= (date_trunc('day', now() AT TIME ZONE 'UTC') - make_interval(days => $2::integer - 1)) AT TIME ZONE 'UTC'
      GROUP BY r.tool_id
      ORDER BY runs DESC, r.tool_id`,
    [teamId, USAGE_DAYS],
  );
  return rows;
}

/** Where the roll-up and the ledger disagree for a team (empty when they agree to the Spark), call it while nothing is written (or in a REPEATABLE READ transaction): each query reads its own snapshot. */
export async function usageDrift(db: Queryable, teamId: string): Promise<string[]> {
  const [day, ledgerDay, tool, ledgerTool] = [
    await usageByDay(db, teamId), await usageByDayFromLedger(db, teamId), await usageByTool(db, teamId), await usageByToolFromLedger(db, teamId),
  ];
  const out: string[] = [];
  const a = JSON.stringify(day);
  const b = JSON.stringify(ledgerDay);
  if (a !== b) out.push(`by day: roll-up ${a} != ledger ${b}`);
  const c = JSON.stringify(tool);
  const d = JSON.stringify(ledgerTool);
  if (c !== d) out.push(`by tool: roll-up ${c} != ledger ${d}`);
  return out;
}
