import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { createApiKey, DEFAULT_RATE, DEFAULT_SCOPES, listApiKeys, MAX_ACTIVE_KEYS_PER_TEAM, revokeApiKey, type ApiKeyListItem } from '../auth/key-admin.js';
import type { Scope } from '../auth/repository.js';
import { invalidRequest, type ErrorCode } from '../core/errors.js';
import { errorResponses } from '../core/schemas.js';
import { asApiErrors } from './errors.js';
import { canManage, requireManager, requireSession } from './guard.js';
import type { ConsoleDeps } from './plugin.js';
import { SESSION_ERRORS } from './routes-session.js';
import { ApiKeyListSchema, CreatedKeySchema, CreateKeyBodySchema, IdParamsSchema, RevokedKeySchema, type ApiKeyItem } from './schemas.js';

const BODY: ErrorCode[] = ['payload_too_large', 'unsupported_media_type'];

function keyItem(k: ApiKeyListItem): ApiKeyItem {
  return {
    id: k.id,
    name: k.name,
    prefix: k.prefix,
    scopes: k.scopes,
    rate_limit_per_minute: k.rate_limit_per_minute,
    created_by: { id: k.member_id, email: k.member_email },
    created_at: k.created_at,
    last_used_at: k.last_used_at,
  };
}

/** Settings > API keys: the same rules as the CLI (src/auth/key-admin.ts), acting as the signed-in member. */
export function keyRoutes(deps: ConsoleDeps): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/console/api/keys',
      {
        schema: {
          operationId: 'listKeys',
          summary: "The team's active API keys; members see them too",
          tags: ['keys'],
          response: { 200: ApiKeyListSchema, ...errorResponses('session_required') },
        },
      },
      async (request) => {
        const s = requireSession(request);
        const keys = await asApiErrors(() => listApiKeys(deps.db.pool, s.teamId, { activeOnly: true }));
        return {
          data: keys.map(keyItem),
          active_keys: keys.length,
          max_active_keys: MAX_ACTIVE_KEYS_PER_TEAM,
          can_manage: canManage(s),
          plan_allows_keys: s.plan !== 'free',
        };
      },
    );

    app.post(
      '/console/api/keys',
      {
        schema: {
          operationId: 'createKey',
          summary: 'Create a key that acts as the signed-in member; the full key is shown only here',
          tags: ['keys'],
          body: CreateKeyBodySchema,
          response: {
            201: CreatedKeySchema,
            ...errorResponses(...SESSION_ERRORS, ...BODY, 'insufficient_role', 'plan_upgrade_required', 'key_limit_reached'),
          },
        },
      },
      async (request, reply) => {
        const s = requireSession(request);
        requireManager(s, 'create API keys');
        const { name } = request.body;
        if (!name.trim()) throw invalidRequest([{ loc: ['body', 'name'], message: 'must not be blank', code: 'blank' }]);
        const made = await asApiErrors(() =>
          createApiKey(deps.db, {
            memberId: s.memberId,
            name,
            scopes: (request.body.scopes ?? DEFAULT_SCOPES) as Scope[],
            rate: request.body.rate_limit_per_minute ?? DEFAULT_RATE,
            envPrefix: deps.config.keyEnvPrefix,
          }),
        );
        const listed = (await listApiKeys(deps.db.pool, s.teamId)).find((k) => k.id === made.api_key.id);
        if (!listed) throw new Error(`key ${made.api_key.id} vanished after creation`);
        return reply.status(201).send({ key: made.key, api_key: keyItem(listed) });
      },
    );

    app.post(
      '/console/api/keys/:id/revoke',
      {
        schema: {
          operationId: 'revokeKey',
          summary: 'Revoke a key: it stops at once, for good',
          tags: ['keys'],
          params: IdParamsSchema,
          response: { 200: RevokedKeySchema, ...errorResponses(...SESSION_ERRORS, ...BODY, 'insufficient_role', 'api_key_not_found') },
        },
      },
      async (request) => {
        const s = requireSession(request);
        requireManager(s, 'revoke API keys');
        const revoked = await asApiErrors(() => revokeApiKey(deps.db.pool, request.params.id, { teamId: s.teamId }));
        deps.teamChanged(s.teamId);
        return { api_key: keyItem(revoked) };
      },
    );
  };
}
