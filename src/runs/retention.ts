import type { Queryable } from '../db/pool.js';

// Retention deletes of the runs domain (issue 37). Each call is one statement, so one short
// transaction: it picks at most `limit` rows FOR UPDATE SKIP LOCKED (another process running the
// same delete takes other rows, never waits, never deletes a row twice) and deletes them.
// Runs themselves and ledger rows are never deleted here.

/**
 * Deletes run events written more than `olderThanSeconds` ago, oldest first. An event that a webhook
 * delivery still refers to stays until its delivery is deleted (a redelivery sends the event's
 * stored body), so nothing here depends on the order the janitor runs its tasks in.
 */
export async function deleteOldRunEvents(db: Queryable, olderThanSeconds: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM run_events WHERE id = ANY (ARRAY(
       SELECT e.id FROM run_events e
        WHERE e.created_at < now() - make_interval(secs => $1::integer)
          AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id)
        ORDER BY e.created_at
        LIMIT $2::integer
          FOR UPDATE SKIP LOCKED))`,
    [olderThanSeconds, limit],
  );
  return rowCount ?? 0;
}

/**
 * Deletes output rows that expired (bytes deleted, status expired) more than `olderThanSeconds` ago. An
 * expired output is already left out of the run (availableOutputs) and its URL already answers
 * 404 output_not_found, so the row going changes no answer.
 */
export async function deleteExpiredOutputRows(db: Queryable, olderThanSeconds: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM run_outputs WHERE id = ANY (ARRAY(
       SELECT id FROM run_outputs
        WHERE status = 'expired' AND expires_at < now() - make_interval(secs => $1::integer)
        ORDER BY expires_at
        LIMIT $2::integer
          FOR UPDATE SKIP LOCKED))`,
    [olderThanSeconds, limit],
  );
  return rowCount ?? 0;
}
