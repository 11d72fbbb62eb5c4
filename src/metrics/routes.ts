import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorBody } from '../core/errors.js';
import type { Metrics } from './metrics.js';

export const METRICS_PATH = '/metrics';

const sha256 = (s: string) => createHash('sha256').update(s).digest();

/**
 * Compares the presented bearer token with the configured one in constant time: both are hashed
 * first, so neither the length nor any prefix of the token shows in the time taken.
 */
export function metricsTokenMatches(authorization: string | undefined, token: string): boolean {
  const m = /^Bearer +(\S+)$/i.exec(authorization ?? '');
  const same = timingSafeEqual(sha256(m?.[1] ?? ''), sha256(token));
  return same && m !== null;
}

function refuse(request: FastifyRequest, reply: FastifyReply, status: number, code: string, message: string): FastifyReply {
  const body: ErrorBody = { error: { code, message, request_id: request.id, errors: null, details: null } };
  return reply.status(status).header('X-Request-Id', request.id).header('Cache-Control', 'no-store').send(body);
}

/**
 * GET /metrics in the Prometheus text format. Off (404, like any unknown path) unless a token is
 * configured; then it needs `Authorization: Bearer <token>` (401 otherwise). It needs no API key,
 * so it never touches a key's rate limit, and it is left out of the OpenAPI document: it is for
 * operators, not API clients.
 */
export function metricsRoutes(deps: {
  metrics: Metrics;
  token: string | null;
  /** The message of the 404 the route answers when off: the server's own, as for any unknown path. */
  notFoundMessage: (method: string, url: string) => string;
}): FastifyPluginAsync {
  return async (app) => {
    app.get(METRICS_PATH, { schema: { hide: true } }, async (request, reply) => {
      if (deps.token === null) {
        return refuse(request, reply, 404, 'not_found', deps.notFoundMessage(request.method, METRICS_PATH));
      }
      if (!metricsTokenMatches(request.headers.authorization, deps.token)) {
        reply.header('WWW-Authenticate', 'Bearer realm="metrics"');
        return refuse(
          request,
          reply,
          401,
          request.headers.authorization ? 'invalid_metrics_token' : 'metrics_token_required',
          'GET /metrics needs "Authorization: Bearer <TOOLRUN_METRICS_TOKEN>" (the operator\'s metrics token, not an API key).',
        );
      }
      const text = await deps.metrics.render();
      return reply.header('Cache-Control', 'no-store').type(deps.metrics.contentType).send(text);
    });
  };
}

/** Counts every response of the app by route pattern, method and status (a root-level hook). */
export function instrumentHttp(app: FastifyInstance, metrics: Metrics): void {
  app.addHook('onResponse', async (request, reply) => {
    metrics.observeHttp(request.is404 ? undefined : request.routeOptions.url, request.method, reply.statusCode, reply.elapsedTime / 1000);
  });
}
