import type { FastifyInstance } from 'fastify';

type Json = Record<string, unknown>;

/**
 * The generated document plus what Fastify's schemas cannot say: the X-Request-Id header on
 * every response, the RateLimit headers on authenticated ones and Retry-After on 429 and 503.
 */
export function buildOpenApiDocument(app: FastifyInstance): Json {
  const doc = structuredClone(app.swagger()) as unknown as Json;
  const components = (doc.components ??= {}) as Json;
  components.headers = {
    XRequestId: { description: 'Unique id of this request; equals error.request_id on errors.', schema: { type: 'string' } },
    RateLimitLimit: { description: "The key's requests per minute.", schema: { type: 'integer' } },
    RateLimitRemaining: { description: 'Requests left in the bucket now.', schema: { type: 'integer' } },
    RateLimitReset: { description: 'Seconds until the bucket is full again.', schema: { type: 'integer' } },
    RetryAfter: { description: 'Seconds to wait before retrying.', schema: { type: 'integer', minimum: 1 } },
  };
  const paths = (doc.paths ?? {}) as Record<string, Record<string, Json>>;
  for (const ops of Object.values(paths)) {
    for (const op of Object.values(ops)) {
      const secured = Array.isArray(op.security) && op.security.length > 0;
      for (const [status, response] of Object.entries((op.responses ?? {}) as Record<string, Json>)) {
        const headers = (response.headers ??= {}) as Json;
        headers['X-Request-Id'] = { $ref: '#/components/headers/XRequestId' };
        if (secured) {
          headers['RateLimit-Limit'] = { $ref: '#/components/headers/RateLimitLimit' };
          headers['RateLimit-Remaining'] = { $ref: '#/components/headers/RateLimitRemaining' };
          headers['RateLimit-Reset'] = { $ref: '#/components/headers/RateLimitReset' };
        }
        // 429 (rate limited) and 503 (service briefly unavailable) both tell the client when to retry.
        if (status === '429' || status === '503') headers['Retry-After'] = { $ref: '#/components/headers/RetryAfter' };
      }
    }
  }
  return doc;
}
