import type { Db, Queryable } from '../db/pool.js';
import { voidLinksFor, voidLinksMadeBy } from './invite-links.js';
import {
  AdminError,
  countOtherOwners,
  endMemberSessions,
  getMember,
  insertMember,
  lockTeam,
  markMemberRemoved,
  mustGetTeam,
  setMemberRole,
  type Member,
  type Role,
} from './repository.js';

/**
 * The team's membership rules, in one place, for the console and `toolrun admin` alike: who may
 * add, change, remove and invite whom, the last owner, and which links a change voids. Every
 * decision is taken inside the transaction that makes the change, on rows it has locked: the
 * team's row (member changes of a team are serialised), then the actor's and the target's
 * (re-read FOR UPDATE), so no role read earlier can authorise a change after it stopped being true.
 */

/**
 * Who asks: a member of a team (the console, with their session), or the operator (`toolrun
 * admin`, the demo seed), who is above the roles but not above the team's rules (the last owner).
 */
export type Actor = { kind: 'member'; memberId: string; teamId: string } | { kind: 'operator' };
export const OPERATOR: Actor = { kind: 'operator' };

const RANK: Record<Role, number> = { member: 0, admin: 1, owner: 2 };

export function mayManageMembers(role: Role): boolean {
  return role === 'owner' || role === 'admin';
}

/**
 * Owners and admins manage members; only an owner gives the owner role or changes, removes or
 * invites an owner, so an admin cannot take the team over. Null `actorRole`: the operator.
 */
export function requireMayChange(actorRole: Role | null, targetRole: Role | null, newRole: Role | null): void {
  if (actorRole === null) return;
  if (!mayManageMembers(actorRole)) {
    throw new AdminError(`Only owners and admins manage members; your role is ${actorRole}.`, 'insufficient_role', {
      required_role: 'admin',
      role: actorRole,
    });
  }
  if (actorRole !== 'owner' && (newRole === 'owner' || targetRole === 'owner')) {
    throw new AdminError('Only an owner gives the owner role, or changes or removes an owner.', 'insufficient_role', {
      required_role: 'owner',
      role: actorRole,
    });
  }
}

/**
 * Who may make a link that sets a member's password: whoever may change the member, and, when
 * the member already has a password (the link resets it, and whoever holds it can sign in as
 * them), only an owner. Accepting checks the same rule again (invite-links.ts consumeLink).
 */
export function requireMayMakeLink(actorRole: Role | null, targetRole: Role, hasPassword: boolean): void {
  requireMayChange(actorRole, targetRole, null);
  if (actorRole !== null && actorRole !== 'owner' && hasPassword) {
    throw new AdminError(
      'This member already has a password: only an owner makes a link that resets it.',
      'insufficient_role',
      { required_role: 'owner', role: actorRole },
    );
  }
}

function noMember(memberId: string): AdminError {
  return new AdminError(`no active member with id ${memberId}`, 'member_not_found');
}

/** The actor's current role, their row locked; null for the operator. */
export async function lockActor(tx: Queryable, actor: Actor, teamId: string): Promise<Role | null> {
  if (actor.kind === 'operator') return null;
  const me = await getMember(tx, actor.memberId, { lock: true });
  if (!me || me.removed_at || me.team_id !== teamId) {
    throw new AdminError('You are no longer a member of this team.', 'insufficient_role', { required_role: 'admin' });
  }
  return me.role;
}

/**
 * Locks the target's team, then re-reads the actor and the target under FOR UPDATE. Another
 * team's member is not found for a member actor.
 */
export async function lockTarget(tx: Queryable, actor: Actor, memberId: string): Promise<{ actorRole: Role | null; target: Member }> {
  const found = await getMember(tx, memberId);
  if (!found || found.removed_at || (actor.kind === 'member' && found.team_id !== actor.teamId)) throw noMember(memberId);
  await lockTeam(tx, found.team_id);
  const actorRole = await lockActor(tx, actor, found.team_id);
  const target = await getMember(tx, memberId, { lock: true });
  if (!target || target.removed_at) throw noMember(memberId);
  return { actorRole, target };
}

async function requireAnotherOwner(tx: Queryable, member: Member): Promise<void> {
  if ((await countOtherOwners(tx, member.team_id, member.id)) === 0) {
    throw new AdminError(`${member.email} is the last owner of team ${member.team_id}; make another member owner first`, 'last_owner');
  }
}

/** Adds a member inside the caller's transaction (with their invite link, in the console). */
export async function addMemberIn(tx: Queryable, actor: Actor, input: { teamId: string; email: string; role: Role }): Promise<Member> {
  await mustGetTeam(tx, input.teamId);
  await lockTeam(tx, input.teamId);
  requireMayChange(await lockActor(tx, actor, input.teamId), null, input.role);
  return insertMember(tx, input);
}

/**
 * Changes a member's role. Any change voids the links for the member (a link is bound to the role
 * the member had when it was made); a demotion also voids the links the member made.
 */
export async function updateMember(db: Db, memberId: string, role: Role, actor: Actor = OPERATOR): Promise<Member> {
  return db.tx(async (tx) => {
    const { actorRole, target } = await lockTarget(tx, actor, memberId);
    requireMayChange(actorRole, target.role, role);
    if (target.role === role) return target;
    if (target.role === 'owner') await requireAnotherOwner(tx, target);
    const changed = await setMemberRole(tx, memberId, role);
    if (!changed) throw noMember(memberId);
    await voidLinksFor(tx, memberId);
    if (RANK[role] < RANK[target.role]) await voidLinksMadeBy(tx, memberId);
    return changed;
  });
}

/**
 * Removes a member: their keys stop for good, their console sessions end, and the links for them
 * and the links they made stop working, all in one transaction.
 */
export async function removeMember(db: Db, memberId: string, actor: Actor = OPERATOR): Promise<Member> {
  return db.tx(async (tx) => {
    const { actorRole, target } = await lockTarget(tx, actor, memberId);
    requireMayChange(actorRole, target.role, null);
    if (target.role === 'owner') await requireAnotherOwner(tx, target);
    const removed = await markMemberRemoved(tx, memberId);
    if (!removed) throw noMember(memberId);
    await endMemberSessions(tx, memberId);
    await voidLinksFor(tx, memberId);
    await voidLinksMadeBy(tx, memberId);
    return removed;
  });
}
