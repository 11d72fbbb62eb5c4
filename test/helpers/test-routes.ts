import type { FastifyPluginAsync } from 'fastify';
import { Type } from 'typebox';

/**
 * Test-only routes, registered onto a real app through AppDeps.extraRoutes, so body, path and
 * scope handling can be exercised through the real hooks and error handler before the API has
 * routes of its own that need them.
 */

/** A closed body in the shape of the spec's file-complete body. */
export const CompleteBody = Type.Object(
  {
    upload_id: Type.String({ minLength: 1 }),
    parts: Type.Array(
      Type.Object(
        {
          part_number: Type.Integer({ minimum: 1, maximum: 10000 }),
          etag: Type.String({ minLength: 1 }),
        },
        { additionalProperties: false },
      ),
      { minItems: 1 },
    ),
  },
  { additionalProperties: false },
);

const RunParams = Type.Object({ run_id: Type.String({ format: 'uuid' }) }, { additionalProperties: false });

/** The message a handler throws; it must never reach a client. */
export const SECRET_FAILURE = 'connection to db-internal.example:5432 failed for user toolrun_owner password hunter2';

export const testRoutes: FastifyPluginAsync = async (app) => {
  // No scope: body errors are the first thing such a route can answer.
  app.post('/test/echo', { schema: { body: CompleteBody } }, async (request) => ({ object: 'echo', body: request.body }));

  // With a scope: authentication must answer before the body is looked at.
  app.post('/test/runs', { config: { scope: 'run' }, schema: { body: CompleteBody } }, async (request) => ({
    object: 'echo',
    body: request.body,
  }));

  app.get('/test/runs/:run_id', { schema: { params: RunParams } }, async (request) => ({
    object: 'run',
    id: (request.params as { run_id: string }).run_id,
  }));

  app.get(
    '/test/list',
    { schema: { querystring: Type.Object({ order: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')])) }) } },
    async (request) => ({ object: 'list', query: request.query }),
  );

  app.get('/test/webhooks-only', { config: { scope: 'webhooks' } }, async () => ({ object: 'ok' }));

  app.get('/test/boom', async () => {
    throw new Error(SECRET_FAILURE);
  });

  app.post('/test/boom', { schema: { body: CompleteBody } }, async () => {
    throw new TypeError(SECRET_FAILURE);
  });
};
