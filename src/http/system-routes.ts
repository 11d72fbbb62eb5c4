import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Db } from '../db/pool.js';
import { ApiError } from './errors.js';
import { errorResponses } from './schemas.js';

const Health = Type.Object({ status: Type.String() }, { additionalProperties: false });

export function systemRoutes(deps: { db: Db; openapi: () => Record<string, unknown> }): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/healthz',
      { schema: { operationId: 'healthz', summary: 'Liveness', tags: ['system'], response: { 200: Health } } },
      async () => ({ status: 'ok' }),
    );
    app.get(
      '/readyz',
      {
        schema: {
          operationId: 'readyz',
          summary: 'Readiness: the database answers',
          tags: ['system'],
          response: { 200: Health, ...errorResponses('service_unavailable') },
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
          response: { 200: Type.Object({}, { additionalProperties: true }) },
        },
      },
      async () => deps.openapi(),
    );
  };
}
