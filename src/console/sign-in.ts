import type { Db } from '../db/pool.js';
import { ApiError } from '../core/errors.js';
import { deleteExpiredDevices, DEVICE_LIFETIME_SECONDS, issueDevice } from './devices.js';
import { DummyHash, verifyPassword } from './passwords.js';
import { createSession, deleteEndedSessions, findSession, type SessionMember } from './sessions.js';
import { admitSignIn, deleteOldAttempts, giveBackAttempt, SIGN_IN_DELAYS, type SignInDelays } from './throttle.js';

export interface SignedIn {
  token: string;
  session: SessionMember;
  /** A new device cookie token for the browser, valid `deviceMaxAgeSeconds`. */
  device: string;
  deviceMaxAgeSeconds: number;
}

const INVALID = 'The email or password is not right. Check both, or ask a team owner or admin for a new invite link.';

/**
 * The account an email names: trimmed and lowered in ASCII only. Console emails are ASCII
 * (EMAIL_PATTERN), and lower() in SQL would follow the database's locale (folding 'İ' to 'i' on a
 * glibc UTF-8 one), so the lookup lowers A-Z alone, exactly as here: the throttle's buckets are
 * keyed on exactly what the lookup matches.
 */
export function accountOf(email: string): string {
  return email.trim().replace(/[A-Z]+/g, (s) => s.toLowerCase());
}

/**
 * Email and password to a session. An email may belong to members of several teams (members are
 * per team): the password is checked against each of that email's active members that has one,
 * all at once, and picks the member it matches (the oldest, should several share it). An unknown
 * email runs scrypt against a dummy hash instead: the same work, the same answer, as a wrong
 * password.
 */
export async function signIn(
  db: Db,
  dummy: DummyHash,
  input: { email: string; password: string; ip: string; device: string | null },
  delays: SignInDelays = SIGN_IN_DELAYS,
): Promise<SignedIn> {
  const account = accountOf(input.email);
  const taken = await admitSignIn(db.pool, { account, ip: input.ip, device: input.device }, delays);
  const { rows } = await db.pool.query<{ member_id: string; hash: string }>(
    `SELECT m.id AS member_id, p.hash FROM members m JOIN member_passwords p ON p.member_id = m.id
      WHERE translate(m.email, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz') = $1::text AND m.removed_at IS NULL
      ORDER BY m.created_at, m.id`,
    [account],
  );
  const candidates = rows.length ? rows : [{ member_id: null, hash: await dummy.get() }];
  const matches = await Promise.all(candidates.map((c) => verifyPassword(input.password, c.hash)));
  const memberId = candidates.find((_, i) => matches[i])?.member_id;
  if (!memberId) throw new ApiError('invalid_credentials', INVALID);
  await giveBackAttempt(db.pool, taken);
  await Promise.all([deleteEndedSessions(db.pool), deleteOldAttempts(db.pool), deleteExpiredDevices(db.pool)]);
  const { token } = await createSession(db.pool, memberId);
  const session = await findSession(db.pool, token);
  // Removed between the password check and now.
  if (!session) throw new ApiError('invalid_credentials', INVALID);
  const device = await issueDevice(db.pool, account, input.device);
  return { token, session, device, deviceMaxAgeSeconds: DEVICE_LIFETIME_SECONDS };
}
