import type { TeamConcurrency } from '../config/config.js';
import type { Db } from '../db/pool.js';
import { RUN_COLUMNS, type RunRow } from './repository.js';

/** How many teams one claim considers before giving up (all busy, or locked by other claims). */
const CANDIDATES = 8;

/** What a claim writes (the take in migration 0025 writes the same): running under a new lease token ($1) of $2 seconds, one more attempt. */
const LEASE = `UPDATE runs SET status = 'running', started_at = coalesce(started_at, now()), lease_owner = $1::text,
       lease_expires_at = now() + make_interval(secs => $2::integer), attempts = attempts + 1, progress = 0`;

/**
 * Takes the next queued run by fair order under the lease token `owner`, or null, in one
 * statement: toolrun_claim_queued (migration 0025) reads the teams with queued runs under their
 * limit in the order a free slot is offered to them (the fewest running first; then the team served
 * least recently, so teams with work take turns however few slots are free; then the oldest queued
 * run), and takes the first team's oldest run whose claim lock it gets. A team's claims take turns
 * on an advisory lock held to their commit, and each counts the team's running runs after taking
 * it, so no number of workers can run more of a team's runs than its limit: a claim that finds the
 * lock taken tries the next team instead of waiting. The order is read before the lock, so claims
 * racing each other may serve one team twice in a row (at most once per racing claim); the turn
 * each records puts that team behind the others at the next claim. Runs whose worker died keep
 * counting (they are still running) until they are taken back or given up.
 */
export async function claimQueued(db: Db, owner: string, leaseSeconds: number, limits: TeamConcurrency): Promise<RunRow | null> {
  const { rows } = await db.pool.query<RunRow>({
    name: 'claim-queued',
    text: `SELECT ${RUN_COLUMNS} FROM toolrun_claim_queued($1::text, $2::integer, $3::integer, $4::integer, $5::integer, $6::integer, $7::integer)`,
    values: [owner, leaseSeconds, limits.free, limits.plus, limits.pro, limits.team, CANDIDATES],
  });
  return rows[0] ?? null;
}

/** Takes back a run whose worker's lease lapsed (it already counts as running for its team). */
export async function claimLapsed(db: Db, owner: string, leaseSeconds: number): Promise<RunRow | null> {
  const { rows } = await db.pool.query<RunRow>({
    name: 'claim-lapsed',
    text: `${LEASE}
      WHERE id = (SELECT id FROM runs WHERE status = 'running' AND lease_expires_at < now() AND attempts < max_attempts
                   ORDER BY lease_expires_at LIMIT 1 FOR UPDATE SKIP LOCKED)
      RETURNING ${RUN_COLUMNS}`,
    values: [owner, leaseSeconds],
  });
  return rows[0] ?? null;
}
