import { Type, type Static } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requireAuth } from '../auth/plugin.js';
import { AUTH_ERRORS, errorResponses } from '../http/schemas.js';

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
  { additionalProperties: false, $id: 'Me', title: 'me' },
);
export type Me = Static<typeof MeSchema>;

export const meRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/v1/me',
    {
      config: { scope: 'read' },
      schema: {
        operationId: 'getMe',
        summary: 'The team and API key making the request',
        tags: ['me'],
        response: { 200: Type.Ref('Me'), ...errorResponses(...AUTH_ERRORS) },
      },
    },
    async (request) => {
      const auth = requireAuth(request);
      const me: Me = {
        object: 'me',
        team: { id: auth.teamId, name: auth.teamName, plan: auth.plan },
        api_key: {
          id: auth.keyId,
          name: auth.keyName,
          prefix: auth.prefix,
          scopes: auth.scopes,
          rate_limit_per_minute: auth.rateLimitPerMinute,
        },
        sparks_available: auth.sparksAvailable,
      };
      return me;
    },
  );
};
