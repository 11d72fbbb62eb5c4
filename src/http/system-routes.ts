import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Db } from '../db/pool.js';
import { ApiError } from '../core/errors.js';
import { anyRequestErrorResponses, errorResponses } from '../core/schemas.js';

const health = (description: string) =>
  Type.Object({ status: Type.String() }, { additionalProperties: false, description, examples: [{ status: 'ok' }] });

export function systemRoutes(deps: { db: Db; openapi: () => Record<string, unknown> }): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/healthz',
      {
        schema: {
          operationId: 'healthz',
          summary: 'Liveness',
          tags: ['system'],
          response: { 200: health('The process is up and serving'), ...anyRequestErrorResponses() },
        },
      },
      async () => ({ status: 'ok' }),
    );
    app.get(
      '/readyz',
      {
        schema: {
          operationId: 'readyz',
          summary: 'Readiness: the database answers',
          tags: ['system'],
          response: { 200: health('The database answers: the service can serve requests'), ...errorResponses('service_unavailable') },
        },
      },
      async () => {
        try {
          await deps.db.pool.query('SELECT 1');
        } catch {
          throw new ApiError('service_unavailable', 'The database does not answer.', { headers: { 'Retry-After': '1' } });
        }
        return { status: 'ok' };
      },
    );
    app.get(
      '/v1/openapi.json',
      {
        schema: {
          operationId: 'getOpenApi',
          summary: 'This OpenAPI 3.1 document',
          tags: ['system'],
          response: {
            200: Type.Object(
              {},
              {
                additionalProperties: true,
                description: 'The OpenAPI 3.1 document of this service',
                examples: [{ openapi: '3.1.0', info: { title: 'Tool-Run API', version: '1' }, paths: {} }],
              },
            ),
            ...anyRequestErrorResponses(),
          },
        },
      },
      async () => deps.openapi(),
    );
  };
}
