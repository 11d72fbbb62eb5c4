import type { Db } from '../db/pool.js';
import { ApiError } from '../core/errors.js';
import { DummyHash, verifyPassword } from './passwords.js';
import { createSession, deleteEndedSessions, findSession, type SessionMember } from './sessions.js';
import { bucketsFor, deleteOldAttempts, giveBackAttempt, takeAttempt } from './throttle.js';

export interface SignedIn {
  token: string;
  session: SessionMember;
}

const INVALID = 'The email or password is not right. Check both, or ask a team owner or admin for a new invite link.';

/**
 * Email and password to a session. An email may belong to members of several teams (members are
 * per team): the password is checked against each of that email's active members that has one,
 * all at once, and picks the member it matches (the oldest, should several share it). An unknown
 * email runs scrypt against a dummy hash instead: the same work, the same answer, as a wrong
 * password.
 */
export async function signIn(db: Db, dummy: DummyHash, input: { email: string; password: string; ip: string }): Promise<SignedIn> {
  const buckets = bucketsFor(input.email, input.ip);
  const wait = await takeAttempt(db.pool, buckets);
  if (wait !== null) {
    throw new ApiError('rate_limited', `Too many sign-in attempts; retry in ${wait} s.`, {
      details: { reason: 'sign_in_attempts' },
      headers: { 'Retry-After': String(wait) },
    });
  }
  const { rows } = await db.pool.query<{ member_id: string; hash: string }>(
    `SELECT m.id AS member_id, p.hash FROM members m JOIN member_passwords p ON p.member_id = m.id
      WHERE lower(m.email) = lower($1::text) AND m.removed_at IS NULL
      ORDER BY m.created_at, m.id`,
    [input.email.trim()],
  );
  const candidates = rows.length ? rows : [{ member_id: null, hash: await dummy.get() }];
  const matches = await Promise.all(candidates.map((c) => verifyPassword(input.password, c.hash)));
  const memberId = candidates.find((_, i) => matches[i])?.member_id;
  if (!memberId) throw new ApiError('invalid_credentials', INVALID);
  await giveBackAttempt(db.pool, buckets);
  await Promise.all([deleteEndedSessions(db.pool), deleteOldAttempts(db.pool)]);
  const { token } = await createSession(db.pool, memberId);
  const session = await findSession(db.pool, token);
  // Removed between the password check and now.
  if (!session) throw new ApiError('invalid_credentials', INVALID);
  return { token, session };
}
