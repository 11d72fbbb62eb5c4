import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config/config.js';
import type { Db } from '../db/pool.js';
import { ApiError } from '../core/errors.js';
import type { Actor } from '../webhooks/service.js';
import { clearedSessionCookie, readCookie, SESSION_COOKIE } from './cookies.js';
import { findSession, type SessionMember } from './sessions.js';
import { csrfTokenOf, sameText } from './tokens.js';

export interface ConsoleSession extends SessionMember {
  token: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    consoleSession: ConsoleSession | null;
  }
  interface FastifyContextConfig {
    /** Console API routes: 'public' needs no session (sign-in, invite accept, the document). */
    consoleAccess?: 'public' | 'session';
  }
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export const CSRF_HEADER = 'x-csrf-token';

/** Whether the cookie must carry Secure: the console is served over https. */
export function secureCookies(config: Config): boolean {
  return new URL(config.publicBaseUrl).protocol === 'https:';
}

/**
 * Before the body is read, for every console API route: a state-changing request whose Origin
 * is not the service's own is refused (403 csrf_failed), sign-in included; then routes that need a
 * session get it from the cookie (401 session_required), and their state-changing requests must
 * carry the session's CSRF token (403 csrf_failed).
 */
export function consoleGuard(config: Config, db: Db) {
  const origin = new URL(config.publicBaseUrl).origin;
  const secure = secureCookies(config);
  return async function guard(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const changes = !SAFE_METHODS.has(request.method);
    const sentOrigin = request.headers.origin;
    if (changes && sentOrigin !== undefined && sentOrigin !== origin) {
      throw new ApiError('csrf_failed', `Requests that change something must come from the console's own pages (${origin}).`, {
        details: { reason: 'origin' },
      });
    }
    if ((request.routeOptions.config.consoleAccess ?? 'session') === 'public') return;
    const token = readCookie(request.headers.cookie, SESSION_COOKIE);
    const session = token ? await findSession(db.pool, token) : null;
    if (!token || !session) {
      // A cookie that names no live session is cleared, so the browser stops sending it.
      if (token) reply.header('Set-Cookie', clearedSessionCookie(secure));
      throw new ApiError('session_required', 'Sign in to the console first; the session is missing, expired or ended.');
    }
    if (changes) {
      const sent = request.headers[CSRF_HEADER];
      if (typeof sent !== 'string' || !sameText(sent, csrfTokenOf(token))) {
        throw new ApiError('csrf_failed', 'The X-CSRF-Token header is missing or wrong; reload the page and try again.', {
          details: { reason: 'token' },
        });
      }
    }
    request.consoleSession = { ...session, token };
  };
}

/** For handlers of routes that need a session: the guard has run, so the session is there. */
export function requireSession(request: FastifyRequest): ConsoleSession {
  if (!request.consoleSession) throw new Error('console route without a session asked for it');
  return request.consoleSession;
}

export function actorOf(s: ConsoleSession): Actor {
  return { teamId: s.teamId, role: s.role };
}

export function canManage(s: { role: string }): boolean {
  return s.role === 'owner' || s.role === 'admin';
}

export function requireManager(s: ConsoleSession, what: string): void {
  if (!canManage(s)) {
    throw new ApiError('insufficient_role', `Only owners and admins ${what}; your role is ${s.role}.`, {
      details: { required_role: 'admin', role: s.role },
    });
  }
}
