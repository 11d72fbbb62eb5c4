import type { Queryable } from '../db/pool.js';

/** Sign-in attempts (failed ones, in effect: a success takes its attempt back) allowed per window. */
export const SIGN_IN_WINDOW_SECONDS = 15 * 60;
export const SIGN_IN_ATTEMPTS_PER_ACCOUNT = 10;
/** Higher: several people may sign in from one office address. */
export const SIGN_IN_ATTEMPTS_PER_ADDRESS = 30;

export interface ThrottleBuckets {
  account: string;
  address: string;
}

export function bucketsFor(email: string, ip: string): ThrottleBuckets {
  return { account: `account:${email.trim().toLowerCase()}`, address: `address:${ip}` };
}

/**
 * Counts one attempt against the account and the address, in one statement shared by every API
 * process (PostgreSQL, so a client cannot multiply its tries by the number of processes), before
 * any password work. Counting first makes concurrent attempts unable to slip past the limit
 * together. Returns the seconds to wait when either bucket is over its limit, else null.
 */
export async function takeAttempt(db: Queryable, buckets: ThrottleBuckets): Promise<number | null> {
  const { rows } = await db.query<{ bucket: string; attempts: number; retry_after: number }>(
    `INSERT INTO console_signin_attempts AS a (bucket, attempts, window_started_at)
     SELECT b, 1, now() FROM unnest($1::text[]) AS b
     ON CONFLICT (bucket) DO UPDATE SET
       attempts = CASE WHEN a.window_started_at <= now() - make_interval(secs => $2::integer) THEN 1 ELSE a.attempts + 1 END,
       window_started_at = CASE WHEN a.window_started_at <= now() - make_interval(secs => $2::integer) THEN now() ELSE a.window_started_at END
     RETURNING a.bucket, a.attempts,
       greatest(1, ceil(extract(epoch FROM a.window_started_at + make_interval(secs => $2::integer) - now())))::integer AS retry_after`,
    [[buckets.account, buckets.address], SIGN_IN_WINDOW_SECONDS],
  );
  let wait: number | null = null;
  for (const r of rows) {
    const limit = r.bucket === buckets.account ? SIGN_IN_ATTEMPTS_PER_ACCOUNT : SIGN_IN_ATTEMPTS_PER_ADDRESS;
    if (r.attempts > limit) wait = Math.max(wait ?? 0, r.retry_after);
  }
  return wait;
}

/** A successful sign-in takes its attempt back, so only failures count towards the limits. */
export async function giveBackAttempt(db: Queryable, buckets: ThrottleBuckets): Promise<void> {
  await db.query(
    'UPDATE console_signin_attempts SET attempts = greatest(0, attempts - 1) WHERE bucket = ANY ($1::text[])',
    [[buckets.account, buckets.address]],
  );
}

/** Windows long over hold nothing; sign-ins sweep them. */
export async function deleteOldAttempts(db: Queryable): Promise<void> {
  await db.query('DELETE FROM console_signin_attempts WHERE window_started_at <= now() - make_interval(secs => $1::integer)', [SIGN_IN_WINDOW_SECONDS]);
}
