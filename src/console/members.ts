import type { Role } from '../auth/repository.js';
import type { Db, Queryable } from '../db/pool.js';
import { ApiError } from '../core/errors.js';
import { addMember, AdminError, getMember, removeMember, updateMember, type Member } from '../teams/repository.js';
import type { ConsoleSession } from './guard.js';
import { createInvite, type Invite } from './invites.js';
import type { MemberView } from './schemas.js';

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

/**
 * Who may do what to whom, on top of the team's rules (src/teams/repository.ts: the last owner
 * stays): owners and admins manage members, and only an owner gives the owner role or changes or
 * removes an owner, so an admin cannot take the team over.
 */
function requireMayChange(actor: ConsoleSession, target: { role: Role } | null, newRole: Role | null): void {
  if (actor.role !== 'owner' && actor.role !== 'admin') {
    throw new ApiError('insufficient_role', `Only owners and admins manage members; your role is ${actor.role}.`, {
      details: { required_role: 'admin', role: actor.role },
    });
  }
  if (actor.role !== 'owner' && (newRole === 'owner' || target?.role === 'owner')) {
    throw new ApiError('insufficient_role', 'Only an owner gives the owner role, or changes or removes an owner.', {
      details: { required_role: 'owner', role: actor.role },
    });
  }
}

/** The team's active member, or member_not_found (another team's included). */
async function teamMember(db: Queryable, actor: ConsoleSession, id: string): Promise<Member> {
  const m = await getMember(db, id);
  if (!m || m.removed_at || m.team_id !== actor.teamId) throw new AdminError(`no member ${id} in this team`, 'member_not_found');
  return m;
}

export async function inviteNewMember(
  db: Db,
  publicBaseUrl: string,
  actor: ConsoleSession,
  input: { email: string; role: Role },
): Promise<{ member: MemberView } & Invite> {
  requireMayChange(actor, null, input.role);
  const member = await addMember(db, { teamId: actor.teamId, email: input.email, role: input.role });
  const invite = await createInvite(db, publicBaseUrl, member.id, { teamId: actor.teamId });
  return { member: await memberView(db.pool, member.id), ...invite };
}

export async function inviteMember(db: Db, publicBaseUrl: string, actor: ConsoleSession, id: string): Promise<Invite> {
  requireMayChange(actor, await teamMember(db.pool, actor, id), null);
  return createInvite(db, publicBaseUrl, id, { teamId: actor.teamId });
}

export async function changeRole(db: Db, actor: ConsoleSession, id: string, role: Role): Promise<MemberView> {
  requireMayChange(actor, await teamMember(db.pool, actor, id), role);
  await updateMember(db, id, role);
  return memberView(db.pool, id);
}

export async function removeTeamMember(db: Db, actor: ConsoleSession, id: string): Promise<{ id: string; removed: true }> {
  requireMayChange(actor, await teamMember(db.pool, actor, id), null);
  await removeMember(db, id);
  return { id, removed: true };
}
