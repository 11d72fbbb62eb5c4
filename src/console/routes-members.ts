import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ErrorCode } from '../core/errors.js';
import { errorResponses } from '../core/schemas.js';
import { asApiErrors } from './errors.js';
import { canManage, requireSession } from './guard.js';
import { changeRole, inviteMember, inviteNewMember, listMembers, removeTeamMember } from './members.js';
import type { ConsoleDeps } from './plugin.js';
import { SESSION_ERRORS } from './routes-session.js';
import { AddedMemberSchema, AddMemberBodySchema, ChangeRoleBodySchema, IdParamsSchema, InviteSchema, MemberListSchema, MemberSchema, RemovedMemberSchema } from './schemas.js';

const BODY: ErrorCode[] = ['payload_too_large', 'unsupported_media_type'];
const MANAGE: ErrorCode[] = [...SESSION_ERRORS, ...BODY, 'insufficient_role', 'member_not_found'];

/** Settings > Members: invite, change role, remove; the team's rules live in src/teams/repository.ts. */
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
        const added = await asApiErrors(() => inviteNewMember(deps.db, base, s, { email: request.body.email, role: request.body.role as 'owner' | 'admin' | 'member' }), {
          loc: ['body', 'email'],
        });
        return reply.status(201).send(added);
      },
    );

    app.post(
      '/console/api/members/:id/invite',
      {
        schema: {
          operationId: 'inviteMember',
          summary: "A new invite link for a member; earlier links stop working",
          tags: ['members'],
          params: IdParamsSchema,
          response: { 201: InviteSchema, ...errorResponses(...MANAGE) },
        },
      },
      async (request, reply) => reply.status(201).send(await asApiErrors(() => inviteMember(deps.db, base, requireSession(request), request.params.id))),
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
        const changed = await asApiErrors(() => changeRole(deps.db, s, request.params.id, request.body.role as 'owner' | 'admin' | 'member'));
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
        const removed = await asApiErrors(() => removeTeamMember(deps.db, s, request.params.id));
        deps.teamChanged(s.teamId);
        return removed;
      },
    );
  };
}
