import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ApiError, type ErrorCode } from '../core/errors.js';
import { errorResponses } from '../core/schemas.js';
import { listDeliveries, redeliverDelivery } from '../webhooks/admin.js';
import { endpointResource, getEndpoint, listEndpoints } from '../webhooks/repository.js';
import { CreateEndpointBodySchema, UpdateEndpointBodySchema } from '../webhooks/schemas.js';
import { createEndpoint, patchEndpoint, removeEndpoint, testEndpoint } from '../webhooks/service.js';
import { asApiErrors } from './errors.js';
import { actorOf, canManage, requireManager, requireSession } from './guard.js';
import type { ConsoleDeps } from './plugin.js';
import { SESSION_ERRORS } from './routes-session.js';
import { DeliveryListSchema, DeliveryParamsSchema, IdParamsSchema, RedeliveredSchema, WebhookListSchema } from './schemas.js';

const BODY: ErrorCode[] = ['payload_too_large', 'unsupported_media_type'];
const MANAGE: ErrorCode[] = [...SESSION_ERRORS, ...BODY, 'insufficient_role', 'webhook_endpoint_not_found'];

/**
 * What a member (not an owner or admin) sees of an endpoint's URL: scheme and host. The path and
 * query often carry a token the receiver checks, and /v1 shows endpoints to owners' and admins'
 * keys only.
 */
export function maskedUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}/…`;
  } catch {
    return '…';
  }
}

const notFound = (id: string) => new ApiError('webhook_endpoint_not_found', `No webhook endpoint ${id} in this team.`);

/**
 * Settings > Webhooks: the /v1 operations (src/webhooks/service.ts) acting as the signed-in
 * member, plus the delivery log and redelivery (src/webhooks/admin.ts). Members may read the
 * endpoints and their deliveries; changes need an owner or admin, as on /v1.
 */
export function webhookConsoleRoutes(deps: ConsoleDeps): FastifyPluginAsyncTypebox {
  const wh = { config: deps.config, db: deps.db };
  return async (app) => {
    app.get(
      '/console/api/webhooks',
      {
        schema: {
          operationId: 'listWebhooks',
          summary: "The team's webhook endpoints; a member (not an owner or admin) sees each URL's scheme and host only",
          tags: ['webhooks'],
          response: { 200: WebhookListSchema, ...errorResponses('session_required') },
        },
      },
      async (request) => {
        const s = requireSession(request);
        const manager = canManage(s);
        const data = (await listEndpoints(deps.db.pool, s.teamId)).map(endpointResource);
        return { data: manager ? data : data.map((e) => ({ ...e, url: maskedUrl(e.url) })), can_manage: manager };
      },
    );

    app.post(
      '/console/api/webhooks',
      {
        schema: {
          operationId: 'createWebhook',
          summary: 'Add an endpoint; its signing secret is shown only here',
          tags: ['webhooks'],
          body: CreateEndpointBodySchema,
          response: { 201: Type.Ref('CreatedWebhookEndpoint'), ...errorResponses(...MANAGE, 'webhook_endpoint_limit_reached') },
        },
      },
      async (request, reply) => {
        const s = requireSession(request);
        return reply.status(201).send(await createEndpoint(wh, actorOf(s), request.body, request.log));
      },
    );

    app.patch(
      '/console/api/webhooks/:id',
      {
        schema: {
          operationId: 'updateWebhook',
          summary: 'Pause, resume or change the events of an endpoint',
          tags: ['webhooks'],
          params: IdParamsSchema,
          body: UpdateEndpointBodySchema,
          response: { 200: Type.Ref('WebhookEndpoint'), ...errorResponses(...MANAGE) },
        },
        preValidation: async (request) => {
          if (request.body === undefined) (request as { body: unknown }).body = {};
        },
      },
      async (request) => patchEndpoint(wh, actorOf(requireSession(request)), request.params.id, request.body),
    );

    app.delete(
      '/console/api/webhooks/:id',
      {
        schema: {
          operationId: 'deleteWebhook',
          summary: 'Delete an endpoint; its deliveries stop at once',
          tags: ['webhooks'],
          params: IdParamsSchema,
          response: {
            200: Type.Object({ id: Type.String({ format: 'uuid' }), deleted: Type.Literal(true) }, { additionalProperties: false, description: 'The endpoint is deleted' }),
            ...errorResponses(...MANAGE),
          },
        },
      },
      async (request) => {
        const done = await removeEndpoint(wh, actorOf(requireSession(request)), request.params.id);
        return { id: done.id, deleted: true as const };
      },
    );

    app.post(
      '/console/api/webhooks/:id/test',
      {
        // Each ping opens a connection to a URL of the team's choosing: the tightest lane.
        config: { consoleRate: 'outbound' },
        schema: {
          operationId: 'testWebhook',
          summary: 'Send a signed ping now and report how the endpoint answered',
          tags: ['webhooks'],
          params: IdParamsSchema,
          response: { 200: Type.Ref('WebhookTest'), ...errorResponses(...MANAGE) },
        },
      },
      async (request) => testEndpoint(wh, actorOf(requireSession(request)), request.params.id, request.log),
    );

    app.get(
      '/console/api/webhooks/:id/deliveries',
      {
        schema: {
          operationId: 'listWebhookDeliveries',
          summary: "The endpoint's deliveries of run events with their attempts, newest first (at most 100)",
          tags: ['webhooks'],
          params: IdParamsSchema,
          response: { 200: DeliveryListSchema, ...errorResponses('session_required', 'webhook_endpoint_not_found') },
        },
      },
      async (request) => {
        const s = requireSession(request);
        if (!(await getEndpoint(deps.db.pool, s.teamId, request.params.id))) throw notFound(request.params.id);
        return { data: await listDeliveries(deps.db.pool, request.params.id) };
      },
    );

    app.post(
      '/console/api/webhooks/:id/deliveries/:delivery_id/redeliver',
      {
        schema: {
          operationId: 'redeliverWebhookDelivery',
          summary: 'Send a delivery that was given up (failed) again, with a fresh retry schedule',
          tags: ['webhooks'],
          params: DeliveryParamsSchema,
          response: { 200: RedeliveredSchema, ...errorResponses(...MANAGE, 'delivery_not_found', 'delivery_not_redeliverable') },
        },
      },
      async (request) => {
        const s = requireSession(request);
        requireManager(s, 'redeliver webhook deliveries');
        const { id, delivery_id: deliveryId } = request.params;
        if (!(await getEndpoint(deps.db.pool, s.teamId, id))) throw notFound(id);
        return asApiErrors(() => redeliverDelivery(deps.db.pool, id, deliveryId), {
          not_found: 'delivery_not_found',
          conflict: 'delivery_not_redeliverable',
        });
      },
    );
  };
}
