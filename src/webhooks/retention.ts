import type { Queryable } from '../db/pool.js';

// Retention deletes of the webhooks domain (issue 37): one statement each, at most `limit` rows
// taken FOR UPDATE SKIP LOCKED, so any number of processes may run them at once.

/**
 * Deletes deliveries that ended (delivered, failed, dropped) more than `olderThanSeconds` ago. A pending
 * one is never deleted, however old: a redelivery makes an old delivery pending again (and clears
 * finished_at), and it is kept for the whole period after it ends again. The console's log and
 * GET .../deliveries simply no longer list it; its redeliver answers 404 delivery_not_found.
 */
export async function deleteOldDeliveries(db: Queryable, olderThanSeconds: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM webhook_deliveries WHERE id = ANY (ARRAY(
       SELECT id FROM webhook_deliveries
        WHERE status <> 'pending' AND finished_at < now() - make_interval(secs => $1::integer)
        ORDER BY finished_at
        LIMIT $2::integer
          FOR UPDATE SKIP LOCKED))`,
    [olderThanSeconds, limit],
  );
  return rowCount ?? 0;
}

/**
 * Deletes attempts (deliveries' and test pings') made more than `olderThanSeconds` ago. By their own age,
 * not their delivery's: attempts of a delivery redelivered late may go before it does, and a
 * delivery's attempts never outlive it by more than the period.
 */
export async function deleteOldAttempts(db: Queryable, olderThanSeconds: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM webhook_attempts WHERE id = ANY (ARRAY(
       SELECT id FROM webhook_attempts
        WHERE attempted_at < now() - make_interval(secs => $1::integer)
        ORDER BY attempted_at
        LIMIT $2::integer
          FOR UPDATE SKIP LOCKED))`,
    [olderThanSeconds, limit],
  );
  return rowCount ?? 0;
}
