import { Type, type Static } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requireAuth } from '../auth/plugin.js';
import type { KeyContext } from '../auth/repository.js';
import { AUTH_ERRORS, errorResponses } from '../core/schemas.js';
import type { Db } from '../db/pool.js';
import type { Balances } from '../sparks/balances.js';

export const MeSchema = Type.Object(
  {
    object: Type.Literal('me'),
    team: Type.Object(
      { id: Type.String(), name: Type.String(), plan: Type.String({ description: 'e.g. plus, pro, team' }) },
      { additionalProperties: false },
    ),
    api_key: Type.Object(
      {
        id: Type.String(),
        name: Type.String(),
        prefix: Type.String({ description: 'The 8-character prefix' }),
        scopes: Type.Array(Type.String(), { description: 'Any of read, run, webhooks' }),
        rate_limit_per_minute: Type.Integer(),
      },
      { additionalProperties: false },
    ),
    sparks_available: Type.Integer({ description: 'Sparks the team can spend now (holds already taken out)' }),
  },
  {
    additionalProperties: false,
    $id: 'Me',
    title: 'me',
    examples: [
      {
        object: 'me',
        team: { id: '1f2e3d4c-5b6a-4978-8695-a4b3c2d1e0f9', name: 'Acme Studio', plan: 'pro' },
        api_key: { id: '3c2b1a09-8f7e-4d6c-9b5a-493827161504', name: 'render farm', prefix: 'Xy7Qp2Lm', scopes: ['read', 'run'], rate_limit_per_minute: 60 },
        sparks_available: 1200,
      },
    ],
  },
);
export type Me = Static<typeof MeSchema>;

function meOf(auth: KeyContext, sparks: number): Me {
  return {
    object: 'me',
    team: { id: auth.teamId, name: auth.teamName, plan: auth.plan },
    api_key: { id: auth.keyId, name: auth.keyName, prefix: auth.prefix, scopes: auth.scopes, rate_limit_per_minute: auth.rateLimitPerMinute },
    sparks_available: sparks,
  };
}

/**
 * The balance is not the key's cached context's: a run's hold and settlement change it without
 * invalidating cached keys (migration 0024). It comes from `balances`, dropped on each change
 * (migration 0026).
 */
export const meRoutes = (deps: { db: Pick<Db, 'pool'>; balances: Balances }): FastifyPluginAsyncTypebox => async (app) => {
  app.get(
    '/v1/me',
    {
      config: { scope: 'read' },
      schema: {
        operationId: 'getMe',
        summary: 'The team and API key making the request',
        tags: ['me'],
        response: { 200: Type.Ref('Me', { description: "The key's team, with its plan and available Sparks, and the key itself" }), ...errorResponses(...AUTH_ERRORS) },
      },
    },
    // Not async: with the balance in memory (most requests) the answer goes out without a promise.
    (request) => {
      const auth = requireAuth(request);
      const sparks = deps.balances.known(auth.teamId);
      return sparks === undefined ? deps.balances.of(deps.db.pool, auth.teamId).then((s) => meOf(auth, s)) : meOf(auth, sparks);
    },
  );
};
