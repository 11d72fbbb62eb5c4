import type { Db } from '../db/pool.js';
import { AdminError, getMember, type Member } from '../teams/repository.js';
import { hashPassword } from './passwords.js';
import { deleteMemberSessions } from './sessions.js';
import { hashToken, newToken } from './tokens.js';

export const INVITE_LIFETIME_HOURS = 72;

export interface Invite {
  invite_url: string;
  expires_at: string;
}

/** The link the console's invite page reads: the token is in the fragment, so it never reaches logs or Referer. */
export function inviteUrl(publicBaseUrl: string, token: string): string {
  return `${publicBaseUrl}/console/invite#token=${token}`;
}

/**
 * A one-time link that sets the member's password, valid 72 hours. It replaces any earlier link
 * for the member, which stops working. With teamId, only a member of that team (another team's is
 * not found).
 */
export async function createInvite(db: Db, publicBaseUrl: string, memberId: string, opts: { teamId?: string } = {}): Promise<Invite> {
  const token = newToken();
  const expiresAt = await db.tx(async (tx) => {
    const member = await getMember(tx, memberId, { lock: true });
    if (!member || member.removed_at || (opts.teamId && member.team_id !== opts.teamId)) {
      throw new AdminError(`no active member with id ${memberId}`, 'member_not_found');
    }
    await tx.query('DELETE FROM member_invites WHERE member_id = $1::uuid', [memberId]);
    const { rows } = await tx.query<{ expires_at: Date }>(
      `INSERT INTO member_invites (token_hash, member_id, expires_at)
       VALUES ($1::bytea, $2::uuid, now() + make_interval(hours => $3::integer)) RETURNING expires_at`,
      [hashToken(token), memberId, INVITE_LIFETIME_HOURS],
    );
    const row = rows[0];
    if (!row) throw new Error('invite insert returned nothing');
    return row.expires_at;
  });
  return { invite_url: inviteUrl(publicBaseUrl, token), expires_at: expiresAt.toISOString() };
}

/**
 * Uses an invite: sets the member's password and ends their other sessions (a new password is a
 * fresh start). Null when the token is unknown, used, replaced or expired, or its member is gone.
 */
export async function acceptInvite(db: Db, token: string, password: string): Promise<Member | null> {
  // A token that cannot be used costs no scrypt: nobody can make the service hash passwords at will.
  const { rows: live } = await db.pool.query(
    'SELECT 1 FROM member_invites WHERE token_hash = $1::bytea AND used_at IS NULL AND expires_at > now()',
    [hashToken(token)],
  );
  if (!live.length) return null;
  // Hashed before the transaction: no row stays locked for the 85 ms of scrypt.
  const hash = await hashPassword(password);
  return db.tx(async (tx) => {
    const { rows } = await tx.query<{ member_id: string }>(
      `UPDATE member_invites i SET used_at = now()
         FROM members m
        WHERE i.token_hash = $1::bytea AND i.used_at IS NULL AND i.expires_at > now()
          AND m.id = i.member_id AND m.removed_at IS NULL
        RETURNING i.member_id`,
      [hashToken(token)],
    );
    const memberId = rows[0]?.member_id;
    if (!memberId) return null;
    await tx.query(
      `INSERT INTO member_passwords (member_id, hash) VALUES ($1::uuid, $2::text)
       ON CONFLICT (member_id) DO UPDATE SET hash = EXCLUDED.hash, set_at = now()`,
      [memberId, hash],
    );
    await deleteMemberSessions(tx, memberId);
    return getMember(tx, memberId);
  });
}
