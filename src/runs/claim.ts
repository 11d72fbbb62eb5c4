import type { TeamConcurrency } from '../config/config.js';
import type { Db } from '../db/pool.js';
import { RUN_COLUMNS, type RunRow } from './repository.js';

/** First key of the advisory locks that serialise one team's claims (the second is the team's). */
const TEAM_CLAIM_LOCK = 730_144;

/** How many teams one claim considers before giving up (all busy, or locked by other claims). */
const CANDIDATES = 8;

/**
 * The teams with queued runs that are under their concurrency limit, in the order a free slot is
 * offered to them: the team with the fewest runs running first; among those, the team served least
 * recently (team_claims, never served first), so teams with work take turns however few slots are
 * free; then the team whose oldest queued run is oldest. The recursive part is a skip scan of
 * runs_team_queued (one probe per team with a backlog); per team, a count on runs_team_running,
 * the head of runs_team_queued and its team_claims row by key. Exported for the plan's test.
 */
export const FAIR_ORDER = `
WITH RECURSIVE queued_teams AS (
  (SELECT team_id FROM runs WHERE status = 'queued' ORDER BY team_id LIMIT 1)
  UNION ALL
  SELECT (SELECT r.team_id FROM runs r WHERE r.status = 'queued' AND r.team_id > q.team_id ORDER BY r.team_id LIMIT 1)
    FROM queued_teams q WHERE q.team_id IS NOT NULL
)
SELECT c.team_id, c.cap FROM (
  SELECT q.team_id,
         (SELECT count(*)::integer FROM runs r WHERE r.team_id = q.team_id AND r.status = 'running') AS running,
         (SELECT r.created_at FROM runs r WHERE r.team_id = q.team_id AND r.status = 'queued' ORDER BY r.created_at, r.id LIMIT 1) AS oldest,
         (SELECT s.last_served_at FROM team_claims s WHERE s.team_id = q.team_id) AS served,
         coalesce(t.max_concurrent_runs,
                  CASE t.plan WHEN 'free' THEN $1::integer WHEN 'plus' THEN $2::integer WHEN 'pro' THEN $3::integer ELSE $4::integer END) AS cap
    FROM queued_teams q JOIN teams t ON t.id = q.team_id
   WHERE q.team_id IS NOT NULL
) c
WHERE c.running < c.cap
ORDER BY c.running, c.served NULLS FIRST, c.oldest, c.team_id
LIMIT $5::integer`;

/** What every claim writes: running under a new lease token ($1) of $2 seconds, one more attempt. */
const LEASE = `UPDATE runs SET status = 'running', started_at = coalesce(started_at, now()), lease_owner = $1::text,
       lease_expires_at = now() + make_interval(secs => $2::integer), attempts = attempts + 1, progress = 0`;

/**
 * Takes team $3's oldest queued run if the team runs fewer than $4, and records the team's turn in
 * the same statement (clock_timestamp: the claim's own moment, not its transaction's start).
 */
export const TAKE = `
WITH taken AS (
${LEASE}
 WHERE id = (SELECT r.id FROM runs r
              WHERE r.team_id = $3::uuid AND r.status = 'queued'
                AND (SELECT count(*) FROM runs x WHERE x.team_id = $3::uuid AND x.status = 'running') < $4::integer
              ORDER BY r.created_at, r.id LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING ${RUN_COLUMNS}
), turn AS (
  INSERT INTO team_claims (team_id, last_served_at) SELECT taken.team_id, clock_timestamp() FROM taken
  ON CONFLICT (team_id) DO UPDATE SET last_served_at = excluded.last_served_at
)
SELECT * FROM taken`;

/**
 * Takes the next queued run by fair order under the lease token `owner`, or null. A team's
 * claims take turns on an advisory lock held to their commit, and each counts the team's running
 * runs after taking it, so no number of workers can run more of a team's runs than its limit: a
 * claim that finds the lock taken tries the next team instead of waiting. The order is read before
 * the lock, so claims racing each other may serve one team twice in a row (at most once per
 * racing claim); the turn each records puts that team behind the others at the next claim. Runs
 * whose worker died keep counting (they are still running) until they are taken back or given up.
 */
export async function claimQueued(db: Db, owner: string, leaseSeconds: number, limits: TeamConcurrency): Promise<RunRow | null> {
  const { rows: teams } = await db.pool.query<{ team_id: string; cap: number }>(FAIR_ORDER, [limits.free, limits.plus, limits.pro, limits.team, CANDIDATES]);
  for (const { team_id: teamId, cap } of teams) {
    const run = await db.tx(async (tx) => {
      const { rows: lock } = await tx.query<{ got: boolean }>('SELECT pg_try_advisory_xact_lock($1::integer, hashtext($2::text)) AS got', [TEAM_CLAIM_LOCK, teamId]);
      if (!lock[0]?.got) return null;
      const { rows } = await tx.query<RunRow>(TAKE, [owner, leaseSeconds, teamId, cap]);
      return rows[0] ?? null;
    });
    if (run) return run;
  }
  return null;
}

/** Takes back a run whose worker's lease lapsed (it already counts as running for its team). */
export async function claimLapsed(db: Db, owner: string, leaseSeconds: number): Promise<RunRow | null> {
  const { rows } = await db.pool.query<RunRow>(
    `${LEASE}
      WHERE id = (SELECT id FROM runs WHERE status = 'running' AND lease_expires_at < now() AND attempts < max_attempts
                   ORDER BY lease_expires_at LIMIT 1 FOR UPDATE SKIP LOCKED)
      RETURNING ${RUN_COLUMNS}`,
    [owner, leaseSeconds],
  );
  return rows[0] ?? null;
}
