import { setTimeout as sleep } from 'node:timers/promises';
import { clientGroup } from '../auth/client-address.js';
import { ApiError } from '../core/errors.js';
import type { Queryable } from '../db/pool.js';
import { isDeviceOf } from './devices.js';
import { hashToken } from './tokens.js';

/**
 * Sign-in throttling. Attempts count in fixed 15-minute windows, shared by every API process
 * (PostgreSQL), and a success takes its attempt back, so in effect failures count:
 * - per client group (an IPv4 address, an IPv6 /64: clientGroup()) across accounts, and per
 *   (account, client group): past their limits that client is refused (429) for the window;
 * - per account, from every client without its device cookie: slowed (progressive delay), and the
 *   delays form one queue per account across all processes, so concurrent tries cannot wait in
 *   parallel; a try whose turn would come more than SIGN_IN_MAX_QUEUE_MS away is refused at once;
 * - per device cookie: a browser that signed in to the account before skips the buckets above and
 *   counts in its own; past its limit the cookie counts for nothing until the window ends.
 */
export const SIGN_IN_WINDOW_SECONDS = 15 * 60;
/** Failures one client group may make against one account. */
export const SIGN_IN_ATTEMPTS_PER_CLIENT = 10;
/** Failures one client group may make across accounts: higher, for an office behind one address. */
export const SIGN_IN_ATTEMPTS_PER_ADDRESS = 30;
/** Failures one device cookie may make (a stolen cookie buys no more guesses than a client). */
export const SIGN_IN_ATTEMPTS_PER_DEVICE = 10;
/** Failures on an account before each further try without its device cookie waits its turn. */
export const SIGN_IN_FREE_FAILURES = 10;
/** The most one try adds to the account's queue: the real member, on a new browser, still signs in within seconds. */
export const SIGN_IN_MAX_DELAY_MS = 5_000;
/**
 * How far ahead a try may take its turn: further, it is refused (429). With the capped delay, the
 * account takes about one untrusted guess per 5 s however many connections send them.
 */
export const SIGN_IN_MAX_QUEUE_MS = 30_000;

export interface SignInDelays {
  /** The first delay past the free failures; it doubles with each further failure. */
  firstDelayMs: number;
  maxDelayMs: number;
  maxQueueMs: number;
}
export const SIGN_IN_DELAYS: SignInDelays = { firstDelayMs: 250, maxDelayMs: SIGN_IN_MAX_DELAY_MS, maxQueueMs: SIGN_IN_MAX_QUEUE_MS };

/** The delay a try adds to the account's queue when the account has this many failures in the window. */
export function signInDelayMs(failures: number, delays: SignInDelays = SIGN_IN_DELAYS): number {
  if (failures < SIGN_IN_FREE_FAILURES) return 0;
  return Math.min(delays.maxDelayMs, delays.firstDelayMs * 2 ** Math.min(30, failures - SIGN_IN_FREE_FAILURES));
}

/** The delays from the first paid failure up to the cap: the SQL indexes this, so the rule lives here only. */
function delaySteps(delays: SignInDelays): number[] {
  const steps: number[] = [];
  for (let failures = SIGN_IN_FREE_FAILURES; steps.length < 32; failures++) {
    const delay = signInDelayMs(failures, delays);
    steps.push(delay);
    if (delay >= delays.maxDelayMs) break;
  }
  return steps;
}

interface Bucket {
  key: string;
  limit: number;
}

// A client group never contains '|', so "group|account" names one pair only.
const clientBucket = (group: string): Bucket => ({ key: `client:${group}`, limit: SIGN_IN_ATTEMPTS_PER_ADDRESS });
const accountClientBucket = (account: string, group: string): Bucket => ({ key: `account-client:${group}|${account}`, limit: SIGN_IN_ATTEMPTS_PER_CLIENT });
const accountBucket = (account: string): Bucket => ({ key: `account:${account}`, limit: Number.POSITIVE_INFINITY });
const deviceBucket = (token: string): Bucket => ({ key: `device:${hashToken(token).toString('hex')}`, limit: SIGN_IN_ATTEMPTS_PER_DEVICE });

interface Taken {
  attempts: number;
  retryAfter: number;
}

/**
 * Counts one attempt in each bucket, in one statement, before any password work: concurrent
 * attempts cannot slip past a limit together.
 */
async function takeAttempt(db: Queryable, buckets: Bucket[]): Promise<Map<string, Taken>> {
  const { rows } = await db.query<{ bucket: string; attempts: number; retry_after: number }>(
    `INSERT INTO console_signin_attempts AS a (bucket, attempts, window_started_at)
     SELECT b, 1, now() FROM unnest($1::text[]) AS b
     ON CONFLICT (bucket) DO UPDATE SET
       attempts = CASE WHEN a.window_started_at <= now() - make_interval(secs => $2::integer) THEN 1 ELSE a.attempts + 1 END,
       window_started_at = CASE WHEN a.window_started_at <= now() - make_interval(secs => $2::integer) THEN now() ELSE a.window_started_at END
     RETURNING a.bucket, a.attempts,
       greatest(1, ceil(extract(epoch FROM a.window_started_at + make_interval(secs => $2::integer) - now())))::integer AS retry_after`,
    [buckets.map((b) => b.key), SIGN_IN_WINDOW_SECONDS],
  );
  return new Map(rows.map((r) => [r.bucket, { attempts: r.attempts, retryAfter: r.retry_after }]));
}

/** Seconds until the latest window of the buckets over their limit ends, or null when none is over. */
function waitFor(buckets: Bucket[], taken: Map<string, Taken>): number | null {
  let wait: number | null = null;
  for (const b of buckets) {
    const t = taken.get(b.key);
    if (t && t.attempts > b.limit) wait = Math.max(wait ?? 0, t.retryAfter);
  }
  return wait;
}

/** A successful sign-in takes its attempts back, so only failures count towards the limits. */
export async function giveBackAttempt(db: Queryable, keys: string[]): Promise<void> {
  await db.query('UPDATE console_signin_attempts SET attempts = greatest(0, attempts - 1) WHERE bucket = ANY ($1::text[])', [keys]);
}

/** Windows long over hold nothing; sign-ins sweep them. */
export async function deleteOldAttempts(db: Queryable): Promise<void> {
  await db.query('DELETE FROM console_signin_attempts WHERE window_started_at <= now() - make_interval(secs => $1::integer)', [SIGN_IN_WINDOW_SECONDS]);
}

function refused(wait: number): ApiError {
  return new ApiError('rate_limited', `Too many sign-in attempts; retry in ${wait} s.`, {
    details: { reason: 'sign_in_attempts' },
    headers: { 'Retry-After': String(wait) },
  });
}

type Turn = { admitted: true; waitMs: number } | { admitted: false; retryAfter: number };

// With `a` the account's row as locked: expired window, and the end of the turn a try would take.
const EXPIRED = 'a.window_started_at <= now() - make_interval(secs => $2::integer)';
const TURN_ENDS = `greatest(now(), coalesce(a.next_at, now())) +
  ($4::integer[])[least(a.attempts - $3::integer + 1, cardinality($4::integer[]))] * interval '1 millisecond'`;
const WITHIN_BOUND = `${TURN_ENDS} <= now() + $5::integer * interval '1 millisecond'`;

/**
 * Counts one failure on the account and, past the free ones, takes the next turn in its queue, in
 * one statement under the row's lock, so tries from every process line up one delay apart. A turn
 * further than the bound is refused: nothing is counted or reserved, and the answer says when a
 * try would fit again (read from the statement's snapshot: advice, not a promise).
 */
async function takeTurn(db: Queryable, account: string, delays: SignInDelays): Promise<Turn> {
  const { rows } = await db.query<{ admitted: boolean; wait_ms: number; retry_after: number }>(
    `WITH taken AS (
       INSERT INTO console_signin_attempts AS a (bucket, attempts, window_started_at) VALUES ($1::text, 1, now())
       ON CONFLICT (bucket) DO UPDATE SET
         attempts = CASE WHEN ${EXPIRED} THEN 1 ELSE a.attempts + 1 END,
         window_started_at = CASE WHEN ${EXPIRED} THEN now() ELSE a.window_started_at END,
         next_at = CASE WHEN ${EXPIRED} OR a.attempts < $3::integer THEN a.next_at ELSE ${TURN_ENDS} END
       WHERE ${EXPIRED} OR a.attempts < $3::integer OR ${WITHIN_BOUND}
       RETURNING a.attempts, a.next_at)
     SELECT true AS admitted, 0 AS retry_after,
       CASE WHEN attempts > $3::integer THEN greatest(0, ceil(extract(epoch FROM next_at - now()) * 1000)) ELSE 0 END::integer AS wait_ms
       FROM taken
     UNION ALL
     SELECT false, greatest(1, ceil(extract(epoch FROM ${TURN_ENDS} - now()) - $5::integer / 1000.0))::integer, 0
       FROM console_signin_attempts a WHERE a.bucket = $1::text AND NOT EXISTS (SELECT 1 FROM taken)`,
    [accountBucket(account).key, SIGN_IN_WINDOW_SECONDS, SIGN_IN_FREE_FAILURES, delaySteps(delays), delays.maxQueueMs],
  );
  const row = rows[0];
  if (row?.admitted) return { admitted: true, waitMs: row.wait_ms };
  return { admitted: false, retryAfter: row?.retry_after ?? 1 };
}

/**
 * Lets one sign-in attempt through, after its turn in the account's queue, or throws 429
 * rate_limited. Returns the buckets it counted in, for a success to give back. `account` is
 * exactly the key the member lookup matches on.
 */
export async function admitSignIn(
  db: Queryable,
  input: { account: string; ip: string; device: string | null },
  delays: SignInDelays = SIGN_IN_DELAYS,
): Promise<string[]> {
  if (input.device !== null && (await isDeviceOf(db, input.device, input.account))) {
    const device = deviceBucket(input.device);
    if (waitFor([device], await takeAttempt(db, [device])) === null) return [device.key];
  }
  const group = clientGroup(input.ip);
  const client = [clientBucket(group), accountClientBucket(input.account, group)];
  const wait = waitFor(client, await takeAttempt(db, client));
  if (wait !== null) throw refused(wait);
  // Counted only once the client is let through: a refused client does not slow the account further.
  const turn = await takeTurn(db, input.account, delays);
  if (!turn.admitted) throw refused(turn.retryAfter);
  if (turn.waitMs > 0) await sleep(turn.waitMs);
  return [...client, accountBucket(input.account)].map((b) => b.key);
}
