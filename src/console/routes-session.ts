import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { ApiError, type ErrorCode } from '../core/errors.js';
import { errorResponses } from '../core/schemas.js';
import { runsThisHour } from '../runs/repository.js';
import { mustGetTeam } from '../teams/repository.js';
import { clearedSessionCookie, DEVICE_COOKIE, deviceCookie, readCookie, SESSION_COOKIE, sessionCookie } from './cookies.js';
import { requireSession, secureCookies, type ConsoleSession } from './guard.js';
import { acceptInvite } from './invites.js';
import type { ConsoleDeps } from './plugin.js';
import { AcceptInviteBodySchema, OverviewSchema, SessionSchema, SignedOutSchema, SignInBodySchema, type SessionView } from './schemas.js';
import { createSession, deleteSession, findSession, type SessionMember } from './sessions.js';
import { signIn } from './sign-in.js';
import { csrfTokenOf } from './tokens.js';

export const SESSION_ERRORS: ErrorCode[] = ['session_required', 'csrf_failed'];
const BODY: ErrorCode[] = ['payload_too_large', 'unsupported_media_type'];

export function sessionView(s: SessionMember, token: string): SessionView {
  return {
    member: { id: s.memberId, email: s.email, role: s.role },
    team: { id: s.teamId, name: s.teamName, plan: s.plan },
    csrf_token: csrfTokenOf(token),
  };
}

export function sessionRoutes(deps: ConsoleDeps): FastifyPluginAsyncTypebox {
  const secure = secureCookies(deps.config);
  const startSession = (reply: FastifyReply, token: string, s: SessionMember): SessionView => {
    reply.header('Set-Cookie', sessionCookie(token, { secure, maxAgeSeconds: s.expiresInSeconds }));
    // Neither the answer (it carries the CSRF token) nor the cookie belongs in any cache.
    reply.header('Cache-Control', 'no-store');
    return sessionView(s, token);
  };

  return async (app) => {
    app.post(
      '/console/api/session',
      {
        config: { consoleAccess: 'public' },
        schema: {
          operationId: 'signIn',
          summary: 'Sign in with email and password; sets the session cookie',
          tags: ['session'],
          body: SignInBodySchema,
          response: { 200: SessionSchema, ...errorResponses('invalid_credentials', 'csrf_failed', 'rate_limited', ...BODY) },
        },
      },
      async (request, reply) => {
        const device = readCookie(request.headers.cookie, DEVICE_COOKIE);
        const signedIn = await signIn(deps.db, deps.dummyHash, { ...request.body, ip: request.ip, device }, deps.signInDelays);
        const view = startSession(reply, signedIn.token, signedIn.session);
        // Marks this browser as one that signed in to the account: failures elsewhere never refuse it.
        reply.header('Set-Cookie', deviceCookie(signedIn.device, { secure, maxAgeSeconds: signedIn.deviceMaxAgeSeconds }));
        return view;
      },
    );

    app.get(
      '/console/api/session',
      {
        schema: {
          operationId: 'getSession',
          summary: 'The signed-in member, their team and the CSRF token',
          tags: ['session'],
          response: { 200: SessionSchema, ...errorResponses('session_required') },
        },
      },
      async (request, reply) => {
        const s = requireSession(request);
        reply.header('Cache-Control', 'no-store');
        return sessionView(s, s.token);
      },
    );

    app.delete(
      '/console/api/session',
      {
        schema: {
          operationId: 'signOut',
          summary: 'Sign out: the session ends and the cookie is cleared',
          tags: ['session'],
          response: { 200: SignedOutSchema, ...errorResponses(...SESSION_ERRORS, ...BODY) },
        },
      },
      async (request, reply) => {
        await deleteSession(deps.db.pool, requireSession(request).token);
        reply.header('Set-Cookie', clearedSessionCookie(secure));
        return { signed_out: true as const };
      },
    );

    app.post(
      '/console/api/invites/accept',
      {
        config: { consoleAccess: 'public' },
        schema: {
          operationId: 'acceptInvite',
          summary: "Set the password with an invite link's token, and sign in",
          tags: ['session'],
          body: AcceptInviteBodySchema,
          response: { 200: SessionSchema, ...errorResponses('invite_invalid', 'csrf_failed', ...BODY) },
        },
      },
      async (request, reply) => {
        // acceptInvite refuses a password the policy does not allow (422) before the link is used.
        const member = await acceptInvite(deps.db, request.body.token, request.body.password);
        if (!member) {
          throw new ApiError(
            'invite_invalid',
            'This invite link is unknown, already used, replaced by a later link, revoked or expired, or no longer valid (the member\'s role changed, or whoever made it left or lost the role to make it). Ask a team owner or admin for a new one.',
          );
        }
        // A session the browser held before (another member's, say) ends: the link signs in its own member.
        const previous = readCookie(request.headers.cookie, SESSION_COOKIE);
        if (previous) await deleteSession(deps.db.pool, previous);
        const { token } = await createSession(deps.db.pool, member.id);
        const session = await findSession(deps.db.pool, token);
        if (!session) throw new ApiError('invite_invalid', 'The member of this invite link was removed meanwhile.');
        return startSession(reply, token, session);
      },
    );

    app.get(
      '/console/api/overview',
      {
        schema: {
          operationId: 'getOverview',
          summary: "The team's plan, Sparks available and runs this hour against the ceiling",
          tags: ['overview'],
          response: { 200: OverviewSchema, ...errorResponses('session_required') },
        },
      },
      async (request) => {
        const s: ConsoleSession = requireSession(request);
        const [team, runs] = await Promise.all([mustGetTeam(deps.db.pool, s.teamId), runsThisHour(deps.db.pool, s.teamId)]);
        return {
          team: { id: team.id, name: team.name, plan: team.plan },
          sparks_available: team.sparks_available,
          runs_this_hour: runs,
          runs_per_hour: team.runs_per_hour,
        };
      },
    );
  };
}
