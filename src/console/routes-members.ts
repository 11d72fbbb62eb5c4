import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ErrorCode } from '../core/errors.js';
import { errorResponses } from '../core/schemas.js';
import { canManage, requireSession } from './guard.js';
import { changeRole, inviteMember, inviteNewMember, listMembers, listPendingInvites, myResetNotices, removeTeamMember, revokePendingInvite } from './members.js';
import type { ConsoleDeps } from './plugin.js';
import { SESSION_ERRORS } from './routes-session.js';
import { AddedMemberSchema, AddMemberBodySchema, ChangeRoleBodySchema, IdParamsSchema, InviteSchema, MemberListSchema, MemberSchema, RemovedMemberSchema } from './schemas.js';
import { PendingInviteListSchema, ResetNoticeListSchema, RevokedInviteSchema } from './schemas-members.js';

const BODY: ErrorCode[] = ['payload_too_large', 'unsupported_media_type'];
const MANAGE: ErrorCode[] = [...SESSION_ERRORS, ...BODY, 'insufficient_role', 'member_not_found'];

/**
 * Settings > Members: invite, change role, remove, the pending links and their revocation, and the
 * reset links made for the signed-in member; the team's rules live in src/teams (membership.ts,
 * invites.ts).
 */
export function memberRoutes(deps: ConsoleDeps): FastifyPluginAsyncTypebox {
  const base = deps.config.publicBaseUrl;
  return async (app) => {
    app.get(
      '/console/api/members',
      {
        schema: {
          operationId: 'listMembers',
          summary: "The team's members",
          tags: ['members'],
          response: { 200: MemberListSchema, ...errorResponses('session_required') },
        },
      },
      async (request) => {
        const s = requireSession(request);
        return { data: await listMembers(deps.db.pool, s.teamId), can_manage: canManage(s) };
      },
    );

    app.post(
      '/console/api/members',
      {
        schema: {
          operationId: 'addMember',
          summary: 'Add a member and make their invite link (valid 72 hours)',
          tags: ['members'],
          body: AddMemberBodySchema,
          response: { 201: AddedMemberSchema, ...errorResponses(...MANAGE, 'member_exists') },
        },
      },
      async (request, reply) => {
        const s = requireSession(request);
        const added = await inviteNewMember(deps.db, base, s, { email: request.body.email, role: request.body.role as 'owner' | 'admin' | 'member' });
        // The answer carries the link's token.
        reply.header('Cache-Control', 'no-store');
        return reply.status(201).send(added);
      },
    );

    app.post(
      '/console/api/members/:id/invite',
      {
        schema: {
          operationId: 'inviteMember',
          summary: 'A new invite link for a member; earlier links stop working. Only an owner makes one for a member who has a password (it resets it)',
          tags: ['members'],
          params: IdParamsSchema,
          response: { 201: InviteSchema, ...errorResponses(...MANAGE) },
        },
      },
      async (request, reply) => {
        const invite = await inviteMember(deps.db, base, requireSession(request), request.params.id);
        reply.header('Cache-Control', 'no-store');
        return reply.status(201).send(invite);
      },
    );

    app.patch(
      '/console/api/members/:id',
      {
        schema: {
          operationId: 'changeMemberRole',
          summary: "Change a member's role; the team keeps at least one owner",
          tags: ['members'],
          params: IdParamsSchema,
          body: ChangeRoleBodySchema,
          response: { 200: MemberSchema, ...errorResponses(...MANAGE, 'last_owner') },
        },
      },
      async (request) => {
        const s = requireSession(request);
        const changed = await changeRole(deps.db, s, request.params.id, request.body.role as 'owner' | 'admin' | 'member');
        deps.teamChanged(s.teamId);
        return changed;
      },
    );

    app.delete(
      '/console/api/members/:id',
      {
        schema: {
          operationId: 'removeMember',
          summary: "Remove a member: their keys stop for good and their sessions end at once",
          tags: ['members'],
          params: IdParamsSchema,
          response: { 200: RemovedMemberSchema, ...errorResponses(...MANAGE, 'last_owner') },
        },
      },
      async (request) => {
        const s = requireSession(request);
        const removed = await removeTeamMember(deps.db, s, request.params.id);
        deps.teamChanged(s.teamId);
        return removed;
      },
    );

    app.get(
      '/console/api/invites',
      {
        schema: {
          operationId: 'listInvites',
          summary: "The team's pending invite links: for whom, made by whom, until when (owners and admins)",
          tags: ['members'],
          response: { 200: PendingInviteListSchema, ...errorResponses('session_required', 'insufficient_role') },
        },
      },
      async (request, reply) => {
        const data = await listPendingInvites(deps.db, requireSession(request));
        reply.header('Cache-Control', 'no-store');
        return { data };
      },
    );

    app.post(
      '/console/api/invites/:id/revoke',
      {
        schema: {
          operationId: 'revokeInvite',
          summary: 'Revoke a pending invite link: it no longer sets a password',
          tags: ['members'],
          params: IdParamsSchema,
          response: { 200: RevokedInviteSchema, ...errorResponses(...SESSION_ERRORS, ...BODY, 'insufficient_role', 'invite_invalid') },
        },
      },
      async (request) => revokePendingInvite(deps.db, requireSession(request), request.params.id),
    );

    app.get(
      '/console/api/password-resets',
      {
        schema: {
          operationId: 'listMyPasswordResets',
          summary: 'Links made to reset your password in the last 30 days, by whom, and whether they were used',
          tags: ['members'],
          response: { 200: ResetNoticeListSchema, ...errorResponses('session_required') },
        },
      },
      async (request, reply) => {
        const data = await myResetNotices(deps.db, requireSession(request));
        reply.header('Cache-Control', 'no-store');
        return { data };
      },
    );
  };
}
