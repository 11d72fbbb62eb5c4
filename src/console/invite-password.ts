import type { Queryable } from '../db/pool.js';
import { checkPassword, passwordRefused } from './password-policy.js';
import { hashToken } from './tokens.js';

/** The email of the member an invite link is for (live or not: accepting decides that), or null. */
export async function inviteeEmail(db: Queryable, token: string): Promise<string | null> {
  const { rows } = await db.query<{ email: string }>(
    'SELECT m.email FROM member_invites i JOIN members m ON m.id = i.member_id WHERE i.token_hash = $1::bytea',
    [hashToken(token)],
  );
  return rows[0]?.email ?? null;
}

/**
 * Refuses (422 at body.password) a password the policy does not allow for the link's member,
 * before the link is used or anything is written. An unknown token is left to accepting, which
 * answers invite_invalid.
 */
export async function refuseWeakInvitePassword(db: Queryable, token: string, password: string): Promise<void> {
  const email = await inviteeEmail(db, token);
  if (email === null) return;
  const problem = await checkPassword(password, email);
  if (problem) throw passwordRefused(problem);
}
