// What the console shows of a team's runs, ledger and usage: read-only queries over the tables the
// runs engine and the ledger write (one function per question, the team always in the WHERE).
import type { Queryable } from '../db/pool.js';
import type { RunSource, RunStatus } from '../runs/repository.js';
import type { Plan } from '../teams/repository.js';

export interface RunListRow {
  id: string;
  tool_id: string;
  status: RunStatus;
  progress: number;
  cost_sparks: number;
  source: RunSource;
  api_key_id: string | null;
  key_name: string | null;
  member_id: string;
  member_email: string;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

export interface RunFilters {
  toolId?: string | undefined;
  status?: string | undefined;
  apiKeyId?: string | undefined;
  memberId?: string | undefined;
  source?: string | undefined;
  /** The id of the last run of the previous page. */
  after?: string | undefined;
  limit: number;
}

const LIST_COLUMNS = `r.id, r.tool_id, r.status, r.progress, r.cost_sparks, r.source, r.api_key_id, k.name AS key_name,
  r.member_id, m.email AS member_email, r.created_at, r.started_at, r.finished_at`;

/** A page of the team's runs, newest first; one more than `limit` when there is a next page. */
export async function listTeamRuns(db: Queryable, teamId: string, f: RunFilters): Promise<RunListRow[]> {
  // The cursor is a run id: the page goes on from that run's place in the order, read in the
  // database at full timestamp precision (a Date would round created_at to the millisecond).
  const { rows } = await db.query<RunListRow>(
    `SELECT ${LIST_COLUMNS}
       FROM runs r JOIN members m ON m.id = r.member_id LEFT JOIN api_keys k ON k.id = r.api_key_id
      WHERE r.team_id = $1::uuid
        AND ($2::text IS NULL OR r.tool_id = $2::text)
        AND ($3::text IS NULL OR r.status = $3::text)
        AND ($4::uuid IS NULL OR r.api_key_id = $4::uuid)
        AND ($5::uuid IS NULL OR r.member_id = $5::uuid)
        AND ($6::text IS NULL OR r.source = $6::text)
        AND ($7::uuid IS NULL OR (r.created_at, r.id) < (SELECT c.created_at, c.id FROM runs c WHERE c.id = $7::uuid AND c.team_id = $1::uuid))
      ORDER BY r.created_at DESC, r.id DESC
      LIMIT $8::integer`,
    [teamId, f.toolId ?? null, f.status ?? null, f.apiKeyId ?? null, f.memberId ?? null, f.source ?? null, f.after ?? null, f.limit + 1],
  );
  return rows;
}

/** Whether the run is the team's (a cursor must be one of its runs). */
export async function isTeamRun(db: Queryable, teamId: string, runId: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM runs WHERE id = $1::uuid AND team_id = $2::uuid', [runId, teamId]);
  return (rowCount ?? 0) > 0;
}

export interface RunDetailRow extends RunListRow {
  inputs: Record<string, unknown>;
  error: string | null;
  /** For a queued run: its place among the team's queued runs, in the order the claim takes them (1 = next). */
  queue_position: number | null;
  team_running: number;
  team_plan: Plan;
  team_max_concurrent_runs: number | null;
}

/** One run of the team with what its page shows, read in one statement (one snapshot: status and the rest agree). */
export async function getTeamRunDetail(db: Queryable, teamId: string, runId: string): Promise<RunDetailRow | null> {
  const { rows } = await db.query<RunDetailRow>(
    `SELECT ${LIST_COLUMNS}, r.inputs, r.error,
            CASE WHEN r.status = 'queued' THEN
              (SELECT count(*)::integer FROM runs q
                WHERE q.team_id = r.team_id AND q.status = 'queued' AND (q.created_at, q.id) <= (r.created_at, r.id)) END AS queue_position,
            (SELECT count(*)::integer FROM runs x WHERE x.team_id = r.team_id AND x.status = 'running') AS team_running,
            t.plan AS team_plan, t.max_concurrent_runs AS team_max_concurrent_runs
       FROM runs r JOIN members m ON m.id = r.member_id LEFT JOIN api_keys k ON k.id = r.api_key_id JOIN teams t ON t.id = r.team_id
      WHERE r.id = $1::uuid AND r.team_id = $2::uuid`,
    [runId, teamId],
  );
  return rows[0] ?? null;
}

/** Every key of the team, revoked ones too (their runs stay listed), and every member: the filters' choices. */
export async function runFilterChoices(db: Queryable, teamId: string): Promise<{ keys: { id: string; name: string }[]; members: { id: string; email: string }[] }> {
  const keys = await db.query<{ id: string; name: string }>(
    `SELECT id, name FROM api_keys WHERE team_id = $1::uuid ORDER BY name, id`,
    [teamId],
  );
  const members = await db.query<{ id: string; email: string }>(`SELECT id, email FROM members WHERE team_id = $1::uuid ORDER BY email, id`, [teamId]);
  return { keys: keys.rows, members: members.rows };
}

export interface LedgerRow {
  id: string;
  kind: string;
  amount: number;
  run_id: string | null;
  note: string | null;
  created_at: Date;
}

export async function runLedger(db: Queryable, teamId: string, runId: string): Promise<LedgerRow[]> {
  const { rows } = await db.query<LedgerRow>(
    // Ordered by the column, not by the text alias (which would put 10 before 9).
    `SELECT l.id::text AS id, l.kind, l.amount, l.run_id, l.note, l.created_at FROM ledger_entries l
      WHERE l.run_id = $1::uuid AND l.team_id = $2::uuid ORDER BY l.id`,
    [runId, teamId],
  );
  return rows;
}

/** A page of the team's ledger, newest first; one more than `limit` when there is a next page. */
export async function teamLedger(db: Queryable, teamId: string, f: { kind?: string | undefined; runId?: string | undefined; before?: string | undefined; limit: number }): Promise<LedgerRow[]> {
  const { rows } = await db.query<LedgerRow>(
    `SELECT l.id::text AS id, l.kind, l.amount, l.run_id, l.note, l.created_at FROM ledger_entries l
      WHERE l.team_id = $1::uuid AND ($2::text IS NULL OR l.kind = $2::text) AND ($3::uuid IS NULL OR l.run_id = $3::uuid)
        AND ($4::bigint IS NULL OR l.id < $4::bigint)
      ORDER BY l.id DESC LIMIT $5::integer`,
    [teamId, f.kind ?? null, f.runId ?? null, f.before ?? null, f.limit + 1],
  );
  return rows;
}

export const USAGE_DAYS = 30;

/**
 * Sparks spent (charges less refunds, by the day they were booked) and runs started, per UTC day.
 * Read from the daily roll-up (migration 0022), which equals usageByDayFromLedger (usage-ledger.ts)
 * at every commit: 30 index rows per tool instead of every charge and run of the month.
 */
export async function usageByDay(db: Queryable, teamId: string): Promise<{ date: string; sparks_spent: number; runs: number }[]> {
  const { rows } = await db.query<{ date: string; sparks_spent: number; runs: number }>(
    `WITH days AS (
       SELECT generate_series(date_trunc('day', now() AT TIME ZONE 'UTC') - make_interval(days => $2::integer - 1),
                              date_trunc('day', now() AT TIME ZONE 'UTC'), interval '1 day')::date AS day)
     SELECT to_char(d.day, 'YYYY-MM-DD') AS date, coalesce(sum(u.sparks_spent), 0)::bigint AS sparks_spent, coalesce(sum(u.runs), 0)::integer AS runs
       FROM days d LEFT JOIN usage_daily u ON u.team_id = $1::uuid AND u.day = d.day
      GROUP BY d.day
      ORDER BY d.day`,
    [teamId, USAGE_DAYS],
  );
  return rows;
}

/** Runs started and Sparks spent on them (whenever booked), per tool, over the same days; most runs first. From the roll-up, as usageByDay. */
export async function usageByTool(db: Queryable, teamId: string): Promise<{ tool_id: string; runs: number; sparks_spent: number }[]> {
  const { rows } = await db.query<{ tool_id: string; runs: number; sparks_spent: number }>(
    `SELECT u.tool_id, sum(u.runs)::integer AS runs, sum(u.run_sparks_spent)::bigint AS sparks_spent
       FROM usage_daily u
      WHERE u.team_id = $1::uuid
        AND u.day >= (date_trunc('day', now() AT TIME ZONE 'UTC') - make_interval(days => $2::integer - 1))::date
      GROUP BY u.tool_id
     HAVING sum(u.runs) > 0
      ORDER BY runs DESC, u.tool_id`,
    [teamId, USAGE_DAYS],
  );
  return rows;
}
