import type { Db } from '../db/pool.js';
import { acceptInvite as acceptLink, createInvite as createLink, findLinkByToken } from '../teams/invites.js';
import { OPERATOR, type Actor } from '../teams/membership.js';
import type { Member } from '../teams/repository.js';
import { checkPassword, passwordRefused } from './password-policy.js';
import { hashPassword } from './passwords.js';
import { hashToken, newToken } from './tokens.js';

export { INVITE_LIFETIME_HOURS } from '../teams/invites.js';

export interface Invite {
  invite_url: string;
  expires_at: string;
}

/** The link the console's invite page reads: the token is in the fragment, so it never reaches logs or Referer. */
export function inviteUrl(publicBaseUrl: string, token: string): string {
  return `${publicBaseUrl}/console/invite#token=${token}`;
}

/** A new token and its hash (only the hash is stored). */
export function newInviteToken(): { token: string; hash: Buffer } {
  const token = newToken();
  return { token, hash: hashToken(token) };
}

/**
 * A one-time link that sets the member's password, valid 72 hours; it replaces any earlier link
 * for the member. By default made by the operator (`toolrun admin member invite`, the demo seed);
 * the console passes the signed-in member, and the team's rules (src/teams) decide.
 */
export async function createInvite(db: Db, publicBaseUrl: string, memberId: string, actor: Actor = OPERATOR): Promise<Invite> {
  const { token, hash } = newInviteToken();
  const made = await createLink(db, memberId, hash, actor);
  return { invite_url: inviteUrl(publicBaseUrl, token), expires_at: made.expires_at.toISOString() };
}

/**
 * Uses an invite: sets the member's password and ends their other sessions. Null when the link is
 * unknown, used, replaced, revoked or expired, or may no longer be used (its member's role changed,
 * its maker left or lost the role to make it).
 */
export async function acceptInvite(db: Db, token: string, password: string): Promise<Member | null> {
  const tokenHash = hashToken(token);
  const link = await findLinkByToken(db.pool, tokenHash);
  if (!link) return null;
  // The policy first (422 at body.password, saying why), for any link that names a member.
  const problem = await checkPassword(password, { email: link.email, teamName: link.team_name });
  if (problem) throw passwordRefused(problem);
  // A token that cannot be used costs no scrypt: nobody can make the service hash passwords at will.
  if (!link.live) return null;
  // Hashed before the transaction: no row stays locked for the 85 ms of scrypt.
  return acceptLink(db, tokenHash, await hashPassword(password));
}
