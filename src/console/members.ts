import type { Role } from '../auth/repository.js';
import type { Db, Queryable } from '../db/pool.js';
import { ApiError, type ErrorCode, type Loc } from '../core/errors.js';
import { addMemberWithInvite, pendingInvites, resetLinksFor, revokeInvite } from '../teams/invites.js';
import { removeMember, updateMember, type Actor } from '../teams/membership.js';
import { AdminError } from '../teams/repository.js';
import { asApiErrors } from './errors.js';
import type { ConsoleSession } from './guard.js';
import { createInvite, inviteUrl, newInviteToken, type Invite } from './invites.js';
import type { MemberView } from './schemas.js';
import type { PendingInviteView, ResetNoticeView } from './schemas-members.js';

/**
 * The console's side of Settings > Members: the signed-in member is the actor and the team's rules
 * (src/teams/membership.ts, src/teams/invites.ts) decide; this file shapes their answers.
 */

export async function listMembers(db: Queryable, teamId: string): Promise<MemberView[]> {
  const { rows } = await db.query<{ id: string; email: string; role: Role; created_at: Date; has_password: boolean }>(
    `SELECT m.id, m.email, m.role, m.created_at, EXISTS (SELECT 1 FROM member_passwords p WHERE p.member_id = m.id) AS has_password
       FROM members m WHERE m.team_id = $1::uuid AND m.removed_at IS NULL ORDER BY m.created_at, m.id`,
    [teamId],
  );
  return rows.map((r) => ({ ...r, created_at: r.created_at.toISOString() }));
}

async function memberView(db: Queryable, id: string): Promise<MemberView> {
  const { rows } = await db.query<{ id: string; email: string; role: Role; created_at: Date; has_password: boolean }>(
    `SELECT m.id, m.email, m.role, m.created_at, EXISTS (SELECT 1 FROM member_passwords p WHERE p.member_id = m.id) AS has_password
       FROM members m WHERE m.id = $1::uuid`,
    [id],
  );
  const r = rows[0];
  if (!r) throw new AdminError(`no member with id ${id}`, 'member_not_found');
  return { ...r, created_at: r.created_at.toISOString() };
}

function actorOf(s: ConsoleSession): Actor & { kind: 'member' } {
  return { kind: 'member', memberId: s.memberId, teamId: s.teamId };
}

/** The shared refusals as API errors; a role refusal keeps the rule's own message and the role it needed. */
function asMemberErrors<T>(fn: () => Promise<T>, codes: { not_found?: ErrorCode; loc?: Loc } = {}): Promise<T> {
  return asApiErrors(async () => {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof AdminError && err.reason === 'insufficient_role') {
        throw new ApiError('insufficient_role', err.message, err.details ? { details: err.details } : {});
      }
      throw err;
    }
  }, codes);
}

export async function inviteNewMember(
  db: Db,
  publicBaseUrl: string,
  actor: ConsoleSession,
  input: { email: string; role: Role },
): Promise<{ member: MemberView } & Invite> {
  const { token, hash } = newInviteToken();
  const made = await asMemberErrors(() => addMemberWithInvite(db, actorOf(actor), { teamId: actor.teamId, ...input }, hash), { loc: ['body', 'email'] });
  return { member: await memberView(db.pool, made.member.id), invite_url: inviteUrl(publicBaseUrl, token), expires_at: made.expires_at.toISOString() };
}

export function inviteMember(db: Db, publicBaseUrl: string, actor: ConsoleSession, id: string): Promise<Invite> {
  return asMemberErrors(() => createInvite(db, publicBaseUrl, id, actorOf(actor)));
}

export async function changeRole(db: Db, actor: ConsoleSession, id: string, role: Role): Promise<MemberView> {
  await asMemberErrors(() => updateMember(db, id, role, actorOf(actor)));
  return memberView(db.pool, id);
}

export async function removeTeamMember(db: Db, actor: ConsoleSession, id: string): Promise<{ id: string; removed: true }> {
  await asMemberErrors(() => removeMember(db, id, actorOf(actor)));
  return { id, removed: true };
}

export async function listPendingInvites(db: Db, actor: ConsoleSession): Promise<PendingInviteView[]> {
  const links = await asMemberErrors(() => pendingInvites(db, actorOf(actor)));
  return links.map((l) => ({ ...l, created_at: l.created_at.toISOString(), expires_at: l.expires_at.toISOString() }));
}

export async function revokePendingInvite(db: Db, actor: ConsoleSession, id: string): Promise<{ id: string; revoked: true }> {
  await asMemberErrors(() => revokeInvite(db, actorOf(actor), id), { not_found: 'invite_invalid' });
  return { id, revoked: true };
}

export async function myResetNotices(db: Db, s: ConsoleSession): Promise<ResetNoticeView[]> {
  const iso = (d: Date | null) => (d ? d.toISOString() : null);
  return (await resetLinksFor(db, s.memberId)).map((n) => ({
    created_by: n.created_by,
    created_at: n.created_at.toISOString(),
    expires_at: n.expires_at.toISOString(),
    used_at: iso(n.used_at),
    revoked_at: iso(n.revoked_at),
  }));
}
