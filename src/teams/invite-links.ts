import type { Queryable } from '../db/pool.js';
import type { Role } from './repository.js';

/**
 * The statements on member_invites (migration 0017). A link is live while unused, not revoked and
 * unexpired; only the SHA-256 of its token is stored, and `id` names it everywhere else.
 */

export interface NewLink {
  tokenHash: Buffer;
  memberId: string;
  /** Null: an operator made it (`toolrun admin member invite`, the demo seed). */
  createdBy: string | null;
  memberRole: Role;
  resetsPassword: boolean;
  lifetimeHours: number;
}

export async function insertLink(db: Queryable, link: NewLink): Promise<{ id: string; expires_at: Date }> {
  const { rows } = await db.query<{ id: string; expires_at: Date }>(
    `INSERT INTO member_invites (token_hash, member_id, created_by, member_role, resets_password, expires_at)
     VALUES ($1::bytea, $2::uuid, $3::uuid, $4::text, $5::boolean, now() + make_interval(hours => $6::integer))
     RETURNING id, expires_at`,
    [link.tokenHash, link.memberId, link.createdBy, link.memberRole, link.resetsPassword, link.lifetimeHours],
  );
  const row = rows[0];
  if (!row) throw new Error('invite insert returned nothing');
  return row;
}

/** Voids the live links for a member (a newer link, a role change, their removal). */
export async function voidLinksFor(db: Queryable, memberId: string): Promise<void> {
  await db.query('UPDATE member_invites SET revoked_at = now() WHERE member_id = $1::uuid AND used_at IS NULL AND revoked_at IS NULL', [memberId]);
}

/** Voids the live links a member made (their removal or demotion). */
export async function voidLinksMadeBy(db: Queryable, makerId: string): Promise<void> {
  await db.query('UPDATE member_invites SET revoked_at = now() WHERE created_by = $1::uuid AND used_at IS NULL AND revoked_at IS NULL', [makerId]);
}

/**
 * The link a token names, live or not, with its member's email and team name (for the password
 * policy): one read before any scrypt, so a dead link costs the caller no hashing. Null for an
 * unknown token.
 */
export async function findLinkByToken(db: Queryable, tokenHash: Buffer): Promise<{ email: string; team_name: string; live: boolean } | null> {
  const { rows } = await db.query<{ email: string; team_name: string; live: boolean }>(
    `SELECT m.email, t.name AS team_name, (i.used_at IS NULL AND i.revoked_at IS NULL AND i.expires_at > now()) AS live
       FROM member_invites i JOIN members m ON m.id = i.member_id JOIN teams t ON t.id = m.team_id
      WHERE i.token_hash = $1::bytea`,
    [tokenHash],
  );
  return rows[0] ?? null;
}

/**
 * Marks a link used if, at this moment, it may still set its member's password, and answers its
 * member; null otherwise. Every condition is in this one statement: the member is active and has
 * the role they had when the link was made, and the maker (unless an operator) is still an active
 * member of the team whose role may make it now: an owner, or an admin for a non-owner who has no
 * password yet (membership.ts requireMayMakeLink, the same rule at making time). A concurrent
 * role change or removal voids the row in its own transaction, so the two cannot both land.
 */
export async function consumeLink(db: Queryable, tokenHash: Buffer): Promise<{ member_id: string; id: string } | null> {
  const { rows } = await db.query<{ member_id: string; id: string }>(
    `UPDATE member_invites i SET used_at = now()
       FROM members m
      WHERE i.token_hash = $1::bytea AND i.used_at IS NULL AND i.revoked_at IS NULL AND i.expires_at > now()
        AND m.id = i.member_id AND m.removed_at IS NULL AND m.role = i.member_role
        AND (i.created_by IS NULL OR EXISTS (
              SELECT 1 FROM members k
               WHERE k.id = i.created_by AND k.team_id = m.team_id AND k.removed_at IS NULL
                 AND (k.role = 'owner'
                      OR (k.role = 'admin' AND m.role <> 'owner'
                          AND NOT EXISTS (SELECT 1 FROM member_passwords p WHERE p.member_id = m.id)))))
      RETURNING i.member_id, i.id`,
    [tokenHash],
  );
  return rows[0] ?? null;
}

export interface LiveLinkRow {
  id: string;
  member_id: string;
  team_id: string;
  member_role: Role;
}

/** A live link of an active member (with lock, its row locked for the caller's transaction). */
export async function getLiveLink(db: Queryable, id: string, opts: { lock?: boolean } = {}): Promise<LiveLinkRow | null> {
  const { rows } = await db.query<LiveLinkRow>(
    `SELECT i.id, i.member_id, m.team_id, m.role AS member_role
       FROM member_invites i JOIN members m ON m.id = i.member_id AND m.removed_at IS NULL
      WHERE i.id = $1::uuid AND i.used_at IS NULL AND i.revoked_at IS NULL AND i.expires_at > now()
       ${opts.lock ? 'FOR UPDATE OF i' : ''}`,
    [id],
  );
  return rows[0] ?? null;
}

export async function revokeLink(db: Queryable, id: string): Promise<void> {
  await db.query('UPDATE member_invites SET revoked_at = now() WHERE id = $1::uuid', [id]);
}

export interface PendingLink {
  id: string;
  member: { id: string; email: string; role: Role };
  created_by: { id: string; email: string } | null;
  created_at: Date;
  expires_at: Date;
  resets_password: boolean;
}

/** The team's live links, oldest first (at most one per member: a newer link voids the older). */
export async function listPendingLinks(db: Queryable, teamId: string): Promise<PendingLink[]> {
  const { rows } = await db.query<{
    id: string;
    member_id: string;
    member_email: string;
    member_role: Role;
    maker_id: string | null;
    maker_email: string | null;
    created_at: Date;
    expires_at: Date;
    resets_password: boolean;
  }>(
    `SELECT i.id, m.id AS member_id, m.email AS member_email, m.role AS member_role,
            k.id AS maker_id, k.email AS maker_email, i.created_at, i.expires_at, i.resets_password
       FROM members m
       JOIN member_invites i ON i.member_id = m.id AND i.used_at IS NULL AND i.revoked_at IS NULL AND i.expires_at > now()
       LEFT JOIN members k ON k.id = i.created_by
      WHERE m.team_id = $1::uuid AND m.removed_at IS NULL
      ORDER BY i.created_at, i.id`,
    [teamId],
  );
  return rows.map((r) => ({
    id: r.id,
    member: { id: r.member_id, email: r.member_email, role: r.member_role },
    created_by: r.maker_id && r.maker_email ? { id: r.maker_id, email: r.maker_email } : null,
    created_at: r.created_at,
    expires_at: r.expires_at,
    resets_password: r.resets_password,
  }));
}

export interface ResetLink {
  created_by: { id: string; email: string } | null;
  created_at: Date;
  expires_at: Date;
  used_at: Date | null;
  revoked_at: Date | null;
}

/** Links made for a member who had a password already, newest first, made in the last `days`. */
export async function listResetLinks(db: Queryable, memberId: string, days: number, limit: number): Promise<ResetLink[]> {
  const { rows } = await db.query<{
    maker_id: string | null;
    maker_email: string | null;
    created_at: Date;
    expires_at: Date;
    used_at: Date | null;
    revoked_at: Date | null;
  }>(
    `SELECT k.id AS maker_id, k.email AS maker_email, i.created_at, i.expires_at, i.used_at, i.revoked_at
       FROM member_invites i LEFT JOIN members k ON k.id = i.created_by
      WHERE i.member_id = $1::uuid AND i.resets_password AND i.created_at > now() - make_interval(days => $2::integer)
      ORDER BY i.created_at DESC, i.id
      LIMIT $3::integer`,
    [memberId, days, limit],
  );
  return rows.map((r) => ({
    created_by: r.maker_id && r.maker_email ? { id: r.maker_id, email: r.maker_email } : null,
    created_at: r.created_at,
    expires_at: r.expires_at,
    used_at: r.used_at,
    revoked_at: r.revoked_at,
  }));
}

export async function memberHasPassword(db: Queryable, memberId: string): Promise<boolean> {
  const { rows } = await db.query('SELECT 1 FROM member_passwords WHERE member_id = $1::uuid', [memberId]);
  return rows.length > 0;
}

/** Sets (or replaces) the member's password. */
export async function setPasswordHash(db: Queryable, memberId: string, hash: string): Promise<void> {
  await db.query(
    `INSERT INTO member_passwords (member_id, hash) VALUES ($1::uuid, $2::text)
     ON CONFLICT (member_id) DO UPDATE SET hash = EXCLUDED.hash, set_at = now()`,
    [memberId, hash],
  );
}
