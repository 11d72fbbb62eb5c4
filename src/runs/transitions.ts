import { randomUUID } from 'node:crypto';
import type { Queryable } from '../db/pool.js';
import { refundCharge, settleRun } from '../sparks/ledger.js';
import { getOutputs, insertOutputs, lockRun, RUN_COLUMNS, runResource, type NewOutput, type RunRow, type RunStatus } from './repository.js';

/** Channels for LISTEN/NOTIFY; notifications are sent at commit, so listeners see committed rows. */
export const RUNS_CHANNEL = 'toolrun_runs';
export const CANCEL_CHANNEL = 'toolrun_run_cancel';
export const EVENTS_CHANNEL = 'toolrun_run_events';

type FinalStatus = Extract<RunStatus, 'succeeded' | 'failed' | 'canceled'>;

/**
 * Moves a locked, unfinished run to its final status in the caller's transaction: the status,
 * the Sparks (charge the price on success, release the rest of the hold), and the outbox event
 * with the run as the API now shows it. Exactly once: callers lock the row and check it is not
 * final, and the ledger's unique index refuses a second settlement outright.
 */
async function finish(tx: Queryable, run: RunRow, status: FinalStatus, error: string | null): Promise<RunRow> {
  const charge = status === 'succeeded' ? run.price_sparks : 0;
  const { rows } = await tx.query<RunRow>({
    name: 'run-finish',
    text: `UPDATE runs SET status = $2::text, error = $3::text, cost_sparks = $4::bigint, finished_at = now(),
            progress = CASE WHEN $2::text = 'succeeded' THEN 1 ELSE progress END,
            lease_owner = NULL, lease_expires_at = NULL
      WHERE id = $1::uuid RETURNING ${RUN_COLUMNS}`,
    values: [run.id, status, error, charge],
  });
  const done = rows[0];
  if (!done) throw new Error(`run ${run.id} vanished`);
  return settleAndAnnounce(tx, done, status, false);
}

/** The Sparks and the outbox event of a run just made final (`done`, as the UPDATE returned it). */
async function settleAndAnnounce(tx: Queryable, done: RunRow, status: FinalStatus, withOutputs: boolean): Promise<RunRow> {
  await settleRun(tx, done.team_id, done.id, done.hold_sparks, done.cost_sparks);
  // Outputs exist only once the success transaction wrote them: no other final run has any to read.
  const payload = runResource(done, withOutputs ? await getOutputs(tx, done.id) : []);
  // The event and its notification in one statement (issue 37).
  await tx.query({
    name: 'run-event',
    text: `WITH e AS (
             INSERT INTO run_events (id, run_id, team_id, type, payload) VALUES ($1::uuid, $2::uuid, $3::uuid, $4::text, $5::jsonb) RETURNING run_id)
           SELECT pg_notify($6::text, e.run_id::text) FROM e`,
    values: [randomUUID(), done.id, done.team_id, `run.${status}`, JSON.stringify(payload), EVENTS_CHANNEL],
  });
  return done;
}

const isFinal = (s: RunStatus) => s === 'succeeded' || s === 'failed' || s === 'canceled';

/**
 * For the worker holding the lease; null when the run is no longer its to finish (canceled, lease
 * lost). The guarded UPDATE is the lock and the check at once (issue 37): a run canceled or
 * retaken meanwhile no longer matches it, and the row stays locked to the commit as before.
 */
export async function succeedRun(
  tx: Queryable,
  runId: string,
  leaseOwner: string,
  outputs: NewOutput[],
  retentionSeconds: number,
): Promise<RunRow | null> {
  const { rows } = await tx.query<RunRow>({
    name: 'run-succeed',
    text: `UPDATE runs SET status = 'succeeded', error = NULL, cost_sparks = price_sparks, finished_at = now(), progress = 1,
            lease_owner = NULL, lease_expires_at = NULL
      WHERE id = $1::uuid AND status = 'running' AND lease_owner = $2::text RETURNING ${RUN_COLUMNS}`,
    values: [runId, leaseOwner],
  });
  const done = rows[0];
  if (!done) return null;
  await insertOutputs(tx, runId, outputs, retentionSeconds);
  return settleAndAnnounce(tx, done, 'succeeded', outputs.length > 0);
}

/** Fails an unfinished run; with a leaseOwner only if that worker still holds it. */
export async function failRun(tx: Queryable, runId: string, error: string, leaseOwner: string | null): Promise<RunRow | null> {
  const run = await lockRun(tx, runId);
  if (!run || isFinal(run.status)) return null;
  if (leaseOwner !== null && run.lease_owner !== leaseOwner) return null;
  return finish(tx, run, 'failed', error);
}

export type CancelOutcome = { kind: 'canceled'; run: RunRow } | { kind: 'already_canceled'; run: RunRow } | { kind: 'final'; run: RunRow };

/** Cancels a queued or running run (the team's own, already locked by the caller). */
export async function cancelLockedRun(tx: Queryable, run: RunRow, why: string | null = null): Promise<CancelOutcome> {
  if (run.status === 'canceled') return { kind: 'already_canceled', run };
  if (isFinal(run.status)) return { kind: 'final', run };
  const done = await finish(tx, run, 'canceled', why);
  // The worker running it (any process, any machine) stops its tool on this notification.
  await tx.query('SELECT pg_notify($1::text, $2::text)', [CANCEL_CHANNEL, run.id]);
  return { kind: 'canceled', run: done };
}

/**
 * Gives a succeeded run's charge back (an output of it failed its check for good) and shows the
 * run as charged nothing. Once per run: later calls find nothing charged and return 0. Returns
 * the Sparks refunded.
 */
export async function refundRun(tx: Queryable, runId: string, note: string): Promise<number> {
  const run = await lockRun(tx, runId);
  if (!run || run.status !== 'succeeded' || run.cost_sparks <= 0) return 0;
  if (!(await refundCharge(tx, run.team_id, run.id, run.cost_sparks, note))) return 0;
  await tx.query('UPDATE runs SET cost_sparks = 0 WHERE id = $1::uuid', [run.id]);
  return run.cost_sparks;
}
