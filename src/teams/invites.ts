import type { Db, Queryable } from '../db/pool.js';
import {
  consumeLink,
  getLiveLink,
  insertLink,
  listPendingLinks,
  listResetLinks,
  memberHasPassword,
  revokeLink,
  setPasswordHash,
  voidLinksFor,
  type PendingLink,
  type ResetLink,
} from './invite-links.js';
import { addMemberIn, lockActor, lockTarget, OPERATOR, requireMayChange, requireMayMakeLink, type Actor } from './membership.js';
import { AdminError, endMemberSessions, getMember, lockTeam, type Member, type Role } from './repository.js';

/**
 * Links that set a member's password (the console's invite links). A link is bound to who made it
 * and to the role the member had then: see invite-links.ts consumeLink for what accepting checks,
 * and membership.ts for the changes that void links. The token is made and hashed by the caller
 * (the console); only its hash comes here.
 */

export const INVITE_LIFETIME_HOURS = 72;
/** A member sees the reset links made for them in this many days... */
export const RESET_NOTICE_DAYS = 30;
/** ...at most this many. */
export const RESET_NOTICE_LIMIT = 20;

export interface MadeLink {
  id: string;
  expires_at: Date;
}

/** Replaces the member's live links with a new one, under the locks lockTarget took. */
async function makeLink(tx: Queryable, actor: Actor, actorRole: Role | null, target: Member, tokenHash: Buffer): Promise<MadeLink> {
  const hasPassword = await memberHasPassword(tx, target.id);
  requireMayMakeLink(actorRole, target.role, hasPassword);
  await voidLinksFor(tx, target.id);
  return insertLink(tx, {
    tokenHash,
    memberId: target.id,
    createdBy: actor.kind === 'member' ? actor.memberId : null,
    memberRole: target.role,
    resetsPassword: hasPassword,
    lifetimeHours: INVITE_LIFETIME_HOURS,
  });
}

/** A new link for a member; the member's earlier links stop working. */
export async function createInvite(db: Db, memberId: string, tokenHash: Buffer, actor: Actor = OPERATOR): Promise<MadeLink> {
  return db.tx(async (tx) => {
    const { actorRole, target } = await lockTarget(tx, actor, memberId);
    return makeLink(tx, actor, actorRole, target, tokenHash);
  });
}

/** Adds a member and makes their first link, in one transaction. */
export async function addMemberWithInvite(
  db: Db,
  actor: Actor,
  input: { teamId: string; email: string; role: Role },
  tokenHash: Buffer,
): Promise<{ member: Member } & MadeLink> {
  return db.tx(async (tx) => {
    const member = await addMemberIn(tx, actor, input);
    const { actorRole, target } = await lockTarget(tx, actor, member.id);
    return { member, ...(await makeLink(tx, actor, actorRole, target, tokenHash)) };
  });
}

/** The link a token names and whether it may still be accepted (before the caller spends scrypt on the password). */
export { findLinkByToken } from './invite-links.js';

/**
 * Uses a link: sets the member's password and ends their sessions. Null when the link is unknown,
 * used, revoked or expired, or may no longer be used (consumeLink says when).
 */
export async function acceptInvite(db: Db, tokenHash: Buffer, passwordHash: string): Promise<Member | null> {
  return db.tx(async (tx) => {
    const used = await consumeLink(tx, tokenHash);
    if (!used) return null;
    await setPasswordHash(tx, used.member_id, passwordHash);
    await endMemberSessions(tx, used.member_id);
    return getMember(tx, used.member_id);
  });
}

/** The team's live links; only owners and admins see them. */
export async function pendingInvites(db: Db, actor: Actor & { kind: 'member' }): Promise<PendingLink[]> {
  // A read: the actor's current role, unlocked (nothing is changed on its strength).
  const me = await getMember(db.pool, actor.memberId);
  if (!me || me.removed_at || me.team_id !== actor.teamId) throw new AdminError('You are no longer a member of this team.', 'insufficient_role', { required_role: 'admin' });
  requireMayChange(me.role, null, null);
  return listPendingLinks(db.pool, actor.teamId);
}

/** Revokes a live link of the team; who may revoke it is who may change its member. */
export async function revokeInvite(db: Db, actor: Actor, linkId: string): Promise<{ id: string }> {
  return db.tx(async (tx) => {
    const gone = () => new AdminError(`no live invite link with id ${linkId}`, 'not_found');
    const found = await getLiveLink(tx, linkId);
    if (!found || (actor.kind === 'member' && found.team_id !== actor.teamId)) throw gone();
    // The team first, as every member change takes its locks (no deadlock with a role change).
    await lockTeam(tx, found.team_id);
    const actorRole = await lockActor(tx, actor, found.team_id);
    const link = await getLiveLink(tx, linkId, { lock: true });
    if (!link) throw gone();
    requireMayChange(actorRole, link.member_role, null);
    await revokeLink(tx, linkId);
    return { id: linkId };
  });
}

/** The reset links made for a member lately, newest first: what the member is told about. */
export async function resetLinksFor(db: Db, memberId: string): Promise<ResetLink[]> {
  return listResetLinks(db.pool, memberId, RESET_NOTICE_DAYS, RESET_NOTICE_LIMIT);
}

export type { PendingLink, ResetLink };
