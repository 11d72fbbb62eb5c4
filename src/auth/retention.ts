import type { Queryable } from '../db/pool.js';

/**
 * How long after a key is revoked (or a member removed) its rate buckets stay. Longer than any
 * process may go on using what it knew of the key: its cached context (TOOLRUN_KEY_CACHE_MAX_AGE_MS,
 * at most 60 s) and its reserved tokens (TOOLRUN_RATE_RESERVATION_MS, at most 60 s). A revoked key
 * never takes again (the take's key lookup leaves revoked keys and removed members out), so a
 * bucket deleted stays deleted.
 */
export const DEAD_BUCKET_GRACE_SECONDS = 3600;

/**
 * Deletes the rate buckets of keys revoked, and the console lanes of members removed, more than the
 * grace period ago: one statement, at most `limit` buckets, taken FOR UPDATE SKIP LOCKED.
 */
export async function deleteDeadRateBuckets(db: Queryable, limit: number, graceSeconds = DEAD_BUCKET_GRACE_SECONDS): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM rate_buckets WHERE ctid = ANY (ARRAY(
       SELECT rb.ctid FROM rate_buckets rb
         LEFT JOIN api_keys k ON k.id = rb.key_id
         LEFT JOIN members m ON m.id = rb.member_id
        WHERE k.revoked_at < now() - make_interval(secs => $1::integer)
           OR m.removed_at < now() - make_interval(secs => $1::integer)
        LIMIT $2::integer
          FOR UPDATE OF rb SKIP LOCKED))`,
    [graceSeconds, limit],
  );
  return rowCount ?? 0;
}
