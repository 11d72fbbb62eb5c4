import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Db } from '../db/pool.js';
import { ApiError } from '../core/errors.js';
import { takeMemberTokens, type LaneTake, type MemberLane } from '../auth/member-buckets.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A console route that also takes from a tighter lane of the member's bucket. */
    consoleRate?: Exclude<MemberLane, 'console'>;
  }
}

/**
 * Per member, per minute (each bucket holds one minute's worth). Every session request takes from
 * 'console': ten a second sustained, far above what a person's browsing and the pages' polling
 * (one request every 2 to 5 s a page) send, and it bounds a script holding a session cookie.
 * Webhook test pings each open a connection to a URL the member chose, so they get the tightest
 * lane; playground uploads (starting and completing one each count) store and probe media.
 */
export const CONSOLE_RATES: Record<MemberLane, number> = { console: 600, outbound: 10, upload: 30 };

const WHAT: Record<MemberLane, string> = {
  console: 'console requests',
  outbound: 'webhook test pings',
  upload: 'playground uploads',
};

/**
 * After the guard, before the body is read: a signed-in member's request takes a token from the
 * member's console bucket (and from its route's lane), whatever it is answered; a request over
 * either limit is refused with 429 rate_limited and Retry-After, as a key over its limit on /v1.
 * Public routes (sign-in, invite accept) have their own throttle.
 */
export function consoleRateLimit(db: Db) {
  return async function limit(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    const session = request.consoleSession;
    if (!session) return;
    const extra = request.routeOptions.config.consoleRate;
    const lanes: LaneTake[] = [{ lane: 'console', perMinute: CONSOLE_RATES.console }];
    if (extra) lanes.push({ lane: extra, perMinute: CONSOLE_RATES[extra] });
    const taken = await takeMemberTokens(db.relaxed, session.memberId, lanes);
    // The tightest refusal: the one to wait longest for.
    const refused = taken
      .filter((t) => !t.took)
      .map((t) => ({ ...t, retryAfter: Math.max(1, Math.ceil(((1 - t.tokens) * 60) / t.perMinute)) }))
      .sort((a, b) => b.retryAfter - a.retryAfter)[0];
    if (!refused) return;
    throw new ApiError('rate_limited', `Too many ${WHAT[refused.lane]} from this member; retry in ${refused.retryAfter} s.`, {
      details: { limit_per_minute: refused.perMinute, reason: refused.lane === 'console' ? 'console' : refused.lane === 'outbound' ? 'webhook_tests' : 'uploads' },
      headers: { 'Retry-After': String(refused.retryAfter) },
    });
  };
}
