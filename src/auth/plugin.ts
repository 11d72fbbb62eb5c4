import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config/config.js';
import type { Db } from '../db/pool.js';
import { ApiError } from '../core/errors.js';
import { clientGroup } from './client-address.js';
import { parseAuthorization, sameHash } from './keys.js';
import type { KeyUsage } from './key-usage.js';
import { KeyCache, type CachedKey } from './key-cache.js';
import { authenticateKey, type KeyContext, type Scope } from './repository.js';
import { TokenReservations } from './reservations.js';
import { UnrecognisedKeyGate } from './unrecognised-keys.js';

declare module 'fastify' {
  interface FastifyRequest {
    auth: KeyContext | null;
  }
  interface FastifyContextConfig {
    /** The scope a key needs for this route; routes without one need no key. */
    scope?: Scope;
  }
}

function setRateHeaders(reply: FastifyReply, limit: number, tokens: number): void {
  const perSecond = limit / 60;
  // Lower-case names: Fastify lower-cases every name it is given (and sends them so) anyway.
  reply.header('ratelimit-limit', String(limit));
  reply.header('ratelimit-remaining', String(Math.max(0, Math.floor(tokens))));
  // Seconds until the bucket is full again: the token-bucket reading of "reset".
  reply.header('ratelimit-reset', String(Math.max(0, Math.ceil((limit - tokens) / perSecond))));
}

/** The most tokens one statement takes from a shared bucket (at most one second's worth). */
const MAX_TAKE = 100;

interface Admission {
  ctx: KeyContext | null;
  allowed: boolean;
  /** Tokens left for this key, shared and reserved here, after this request. */
  remaining: number;
  /** Tokens in the shared bucket as last read, refilled since (for Retry-After). */
  bucket: number;
}

/** A cached context's shared bucket now: as read, plus the refill since, capped at a minute's worth. */
function bucketNow(c: CachedKey, now = Date.now()): number {
  const limit = c.value.rateLimitPerMinute;
  return Math.min(limit, c.value.rateTokens + ((now - c.readAt) / 60_000) * limit);
}

/**
 * Authentication, rate limit, plan and scope, in that order, before the body is even read.
 * A key seen lately is answered from memory (KeyCache, kept true by PostgreSQL's notifications),
 * and every request of a known key takes a token, whatever it is answered, from the key's shared
 * bucket a batch at a time (TokenReservations): most requests touch no database at all.
 */
export function createAuthHook(
  config: Config,
  db: Db,
  usage: KeyUsage | null = null,
  cache = new KeyCache(config.keyCacheMaxAgeMs),
  reservations = new TokenReservations(config.rateReservationMs),
  gate = new UnrecognisedKeyGate(config.unrecognisedKeysPerSecond),
) {
  /** Reads the key (taking up to maxTake tokens) and keeps its context for the next requests. */
  async function read(k: string, hash: Buffer, maxTake: number): Promise<KeyContext | null> {
    const ticket = cache.ticket();
    const ctx = await authenticateKey(db.relaxed, hash, maxTake);
    if (ctx) cache.put(k, ctx, ticket);
    return ctx;
  }

  async function admit(k: string, hash: Buffer): Promise<Admission> {
    // A reserved token is claimed synchronously, before any await, so two requests never count on
    // the same one; it is given back if the key is no longer valid.
    if (!reservations.spend(k)) {
      const took = await reservations.exclusive(k, async (): Promise<Admission | 'claimed'> => {
        if (reservations.spend(k)) return 'claimed'; // the request before us reserved some
        const ctx = await read(k, hash, MAX_TAKE);
        const taken = ctx?.taken ?? 0;
        if (ctx && taken > 1) reservations.add(k, taken - 1);
        const remaining = ctx ? Math.floor(ctx.rateTokens) + Math.max(0, taken - 1) : 0;
        return { ctx, allowed: taken >= 1, remaining, bucket: ctx?.rateTokens ?? 0 };
      });
      if (took !== 'claimed') return took;
    }
    const known = cache.get(k);
    const ctx = known ? known.value : await read(k, hash, 0);
    if (!ctx) {
      reservations.add(k, 1);
      return { ctx, allowed: false, remaining: 0, bucket: 0 };
    }
    const bucket = known ? bucketNow(known) : ctx.rateTokens;
    return { ctx, allowed: true, remaining: Math.floor(bucket) + reservations.available(k), bucket };
  }

  const refilling = new Set<string>();
  /**
   * A key spending a large batch (a high rate under steady traffic) takes its next batch while a
   * whole batch is still left, so that its requests do not all stop and wait on one take. With
   * half a batch left, a take slower than half a batch's worth of requests (a busy PostgreSQL)
   * sent 20-35% of bench:http's requests down the slow path to wait for it; with a whole one,
   * under 5%. A process then holds at most two batches (two seconds' worth, at most 200 tokens),
   * all taken from the shared bucket: the limit is never exceeded, only undershot by what lapses.
   */
  function refillAhead(k: string, ctx: KeyContext, available: number): void {
    const batch = Math.min(MAX_TAKE, Math.floor(ctx.rateLimitPerMinute / 60));
    if (batch < 4 || available > batch || refilling.has(k)) return;
    refilling.add(k);
    const hash = Buffer.from(k, 'hex');
    reservations
      .exclusive(k, async () => {
        const fresh = await read(k, hash, MAX_TAKE);
        if (fresh?.taken) reservations.add(k, fresh.taken);
      })
      // A refill that failed leaves the next request to take for itself, as without it.
      .catch(() => undefined)
      .finally(() => refilling.delete(k));
  }

  /** The hex of the key's hash, or the 401 the Authorization header earns. */
  function keyOf(request: FastifyRequest): string {
    const parsed = parseAuthorization(request.headers.authorization, config.keyEnvPrefix);
    if (parsed.kind === 'none' || parsed.kind === 'not_a_key') {
      throw new ApiError(
        'api_key_required',
        'This call needs an API key: send the header "Authorization: Bearer svc_...". Session tokens are not accepted.',
      );
    }
    if (parsed.kind !== 'key') {
      throw new ApiError(
        'invalid_api_key',
        parsed.kind === 'wrong_env'
          ? `This API key belongs to another environment; this server accepts only ${config.keyEnvPrefix} keys.`
          : 'The API key is malformed, unknown or revoked. Check it, or ask a team owner or admin for a new one.',
      );
    }
    return parsed.hashHex;
  }

  /**
   * Everything after the key is known (or not): the rate, plan and scope verdicts, in that order.
   * `hash` is the key's hash when ctx was read for it here; null when ctx is the cache's entry
   * for this very hash (put there by a read for it), which needs no second comparison.
   */
  function decide(
    request: FastifyRequest,
    reply: FastifyReply,
    scope: Scope,
    hex: string,
    hash: Buffer | null,
    ctx: KeyContext | null,
    allowed: boolean,
    remaining: number,
    bucket: number,
  ): void {
    if (!ctx || (hash !== null && !sameHash(ctx.keyHash, hash))) {
      gate.forget(hex);
      throw new ApiError(
        'invalid_api_key',
        'The API key is malformed, unknown or revoked. Check it, or ask a team owner or admin for a new one.',
      );
    }
    gate.markValid(hex);
    // Noted in memory; written later, off the request path (src/auth/key-usage.ts).
    usage?.seen(ctx.keyId);
    // Every response to a known key carries the RateLimit headers, refusals included.
    setRateHeaders(reply, ctx.rateLimitPerMinute, remaining);
    // The rate applies to every request, so it answers first: a key over its limit is told to
    // wait whatever else is wrong with the call, and a 403 never comes free.
    if (!allowed) {
      const retryAfter = Math.max(1, Math.ceil(((1 - bucket) * 60) / ctx.rateLimitPerMinute));
      throw new ApiError('rate_limited', `Too many requests for this key; retry in ${retryAfter} s.`, {
        details: { limit_per_minute: ctx.rateLimitPerMinute },
        headers: { 'Retry-After': String(retryAfter) },
      });
    }
    if (ctx.plan === 'free') {
      throw new ApiError('plan_upgrade_required', 'API access needs the Plus, Pro or Team plan. Upgrade the team to use this key.', {
        details: { plan: ctx.plan, required_plans: ['plus', 'pro', 'team'] },
      });
    }
    if (!ctx.scopes.includes(scope)) {
      throw new ApiError('insufficient_scope', `This API key lacks the "${scope}" scope. Create a key with that scope.`, {
        details: { required_scope: scope },
      });
    }
    request.auth = ctx;
  }

  /** A key this process does not hold in memory with a token to spend: the gate, then PostgreSQL. */
  async function slow(request: FastifyRequest, reply: FastifyReply, scope: Scope, hex: string): Promise<void> {
    // A flood of bad keys waits its turn, behind its own client's other lookups, instead of
    // crowding out the keys in use and other clients' new keys. Whether a request queues depends
    // on the whole key's hash only (a known prefix changes nothing), where it queues on the client.
    const gated = !gate.isRecent(hex);
    if (gated) {
      const refused = await gate.admit(clientGroup(request.ip));
      if (refused) {
        // No key is known yet: the limit this client ran into is its share of the server's
        // lookups of unseen keys, so that is the limit reported.
        throw new ApiError('rate_limited', `Too many requests with API keys this server has not seen lately; retry in ${refused.retryAfterSeconds} s.`, {
          details: { limit_per_minute: refused.limitPerMinute, reason: 'unrecognised_keys' },
          headers: { 'Retry-After': String(refused.retryAfterSeconds) },
        });
      }
    }
    const hash = Buffer.from(hex, 'hex');
    let a: Admission;
    try {
      a = await admit(hex, hash);
    } finally {
      if (gated) gate.lookupDone();
    }
    decide(request, reply, scope, hex, hash, a.ctx, a.allowed, a.remaining, a.bucket);
  }

  // A callback hook, not an async one: a key in memory with a reserved token is decided without a
  // promise (most requests), and only the rest wait for the gate or PostgreSQL. That path also
  // allocates as little as it can: the key's hash stays a hex string (no Buffer), no admission
  // object, one clock reading. It is a hook of each route that needs a key (addRouteHooks in
  // src/service/route-hooks.ts), made for that route's scope: routes without one (and 404s) never run it,
  // and it never reads request.routeOptions, which Fastify builds afresh on each read.
  return function forScope(scope: Scope) {
    return function authenticate(request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void {
      let hex: string;
      try {
        hex = keyOf(request);
        const now = Date.now();
        const cached = gate.isRecent(hex, now) ? cache.get(hex) : null;
        // The token is claimed synchronously, so two requests never count on the same one.
        if (cached && reservations.spend(hex, now)) {
          const bucket = bucketNow(cached, now);
          const available = reservations.available(hex, now);
          decide(request, reply, scope, hex, null, cached.value, true, Math.floor(bucket) + available, bucket);
          refillAhead(hex, cached.value, available);
          return done();
        }
      } catch (err) {
        return done(err as Error);
      }
      slow(request, reply, scope, hex).then(() => done(), done);
    };
  };
}

/** For handlers of routes that declare a scope: the hook has run, so the context is there. */
export function requireAuth(request: FastifyRequest): KeyContext {
  if (!request.auth) throw new Error('route without a scope asked for the key context');
  return request.auth;
}
