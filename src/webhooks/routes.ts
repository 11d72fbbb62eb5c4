import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requireAuth } from '../auth/plugin.js';
import { AUTH_ERRORS, errorResponses, numericLimit } from '../core/schemas.js';
import type { ErrorCode } from '../core/errors.js';
import {
  CreatedWebhookEndpointSchema,
  DeliveryListQuerySchema,
  DeliveryParamsSchema,
  WebhookDeliveryListSchema,
  WebhookDeliverySchema,
  CreateEndpointBodySchema,
  DeletedSchema,
  EndpointIdParamsSchema,
  RotateSecretBodySchema,
  UpdateEndpointBodySchema,
  WebhookEndpointListSchema,
  WebhookEndpointSchema,
  WebhookTestSchema,
} from './schemas.js';
import {
  createEndpoint,
  listEndpointDeliveries,
  listTeamEndpoints,
  patchEndpoint,
  redeliverEndpointDelivery,
  removeEndpoint,
  rotateEndpointSecret,
  testEndpoint,
  type WebhooksDeps,
} from './service.js';

export function webhookSchemas(app: { addSchema(s: unknown): unknown }): void {
  app.addSchema(WebhookEndpointSchema);
  app.addSchema(CreatedWebhookEndpointSchema);
  app.addSchema(WebhookEndpointListSchema);
  app.addSchema(WebhookTestSchema);
  app.addSchema(DeletedSchema);
  app.addSchema(WebhookDeliverySchema);
  app.addSchema(WebhookDeliveryListSchema);
}

const COMMON: ErrorCode[] = [...AUTH_ERRORS, 'insufficient_role'];
const BODY: ErrorCode[] = ['payload_too_large', 'unsupported_media_type'];

export function webhookRoutes(deps: WebhooksDeps): FastifyPluginAsyncTypebox {
  return async (app) => {
    const config = { scope: 'webhooks' as const };
    app.get(
      '/v1/webhook-endpoints',
      {
        config,
        schema: {
          operationId: 'listWebhookEndpoints',
          summary: "The team's webhook endpoints",
          tags: ['webhooks'],
          response: { 200: Type.Ref('WebhookEndpointList', { description: "The team's endpoints, oldest first" }), ...errorResponses(...COMMON) },
        },
      },
      async (request) => ({ object: 'list' as const, data: await listTeamEndpoints(deps, requireAuth(request)) }),
    );

    app.post(
      '/v1/webhook-endpoints',
      {
        config,
        schema: {
          operationId: 'createWebhookEndpoint',
          summary: 'Add an endpoint; the signing secret is returned only here',
          tags: ['webhooks'],
          body: CreateEndpointBodySchema,
          response: { 201: Type.Ref('CreatedWebhookEndpoint', { description: 'The endpoint, with its signing secret (shown only here)' }), ...errorResponses(...COMMON, ...BODY, 'webhook_endpoint_limit_reached') },
        },
      },
      // The answer carries the signing secret: no cache may keep it.
      async (request, reply) => reply.status(201).header('Cache-Control', 'no-store').send(await createEndpoint(deps, requireAuth(request), request.body, request.log)),
    );

    app.patch(
      '/v1/webhook-endpoints/:endpoint_id',
      {
        config,
        schema: {
          operationId: 'updateWebhookEndpoint',
          summary: 'Pause, resume or change the events of an endpoint; pausing drops pending deliveries',
          tags: ['webhooks'],
          params: EndpointIdParamsSchema,
          body: UpdateEndpointBodySchema,
          response: { 200: Type.Ref('WebhookEndpoint', { description: 'The endpoint as changed' }), ...errorResponses(...COMMON, ...BODY, 'webhook_endpoint_not_found') },
        },
        // A PATCH with no body at all is an empty change, like {}.
        preValidation: async (request) => {
          if (request.body === undefined) (request as { body: unknown }).body = {};
        },
      },
      async (request) => patchEndpoint(deps, requireAuth(request), request.params.endpoint_id, request.body),
    );

    app.delete(
      '/v1/webhook-endpoints/:endpoint_id',
      {
        config,
        schema: {
          operationId: 'deleteWebhookEndpoint',
          summary: 'Delete an endpoint; its deliveries stop at once',
          tags: ['webhooks'],
          params: EndpointIdParamsSchema,
          // DELETE and the bodiless POST below may still carry a body, which is parsed like any other.
          response: { 200: Type.Ref('Deleted', { description: 'The endpoint is deleted' }), ...errorResponses(...COMMON, ...BODY, 'webhook_endpoint_not_found') },
        },
      },
      async (request) => removeEndpoint(deps, requireAuth(request), request.params.endpoint_id),
    );

    app.post(
      '/v1/webhook-endpoints/:endpoint_id/test',
      {
        config,
        schema: {
          operationId: 'testWebhookEndpoint',
          summary: 'Send a signed ping event now and report how the endpoint answered',
          tags: ['webhooks'],
          params: EndpointIdParamsSchema,
          response: { 200: Type.Ref('WebhookTest', { description: 'How the endpoint answered the ping' }), ...errorResponses(...COMMON, ...BODY, 'webhook_endpoint_not_found') },
        },
      },
      async (request) => testEndpoint(deps, requireAuth(request), request.params.endpoint_id, request.log),
    );

    app.post(
      '/v1/webhook-endpoints/:endpoint_id/rotate-secret',
      {
        config,
        schema: {
          operationId: 'rotateWebhookEndpointSecret',
          summary: 'Replace the signing secret; the new one is returned only here, and the old one keeps signing beside it for a while',
          description:
            'Until the previous secret expires (expire_previous_in_seconds, default 86400, 0 for at once), Service-Signature carries one v1 per live secret, the new one first. A later rotation replaces the previous secret: at most two sign at once.',
          tags: ['webhooks'],
          params: EndpointIdParamsSchema,
          body: RotateSecretBodySchema,
          response: {
            200: Type.Ref('CreatedWebhookEndpoint', { description: 'The endpoint, with its new signing secret (shown only here)' }),
            ...errorResponses(...COMMON, ...BODY, 'webhook_endpoint_not_found'),
          },
        },
        // The body is optional: none at all is the defaults, like {}.
        preValidation: async (request) => {
          if (request.body === undefined) (request as { body: unknown }).body = {};
        },
      },
      async (request, reply) => reply.header('Cache-Control', 'no-store').send(await rotateEndpointSecret(deps, requireAuth(request), request.params.endpoint_id, request.body)),
    );

    app.get(
      '/v1/webhook-endpoints/:endpoint_id/deliveries',
      {
        config,
        preValidation: numericLimit,
        schema: {
          operationId: 'listWebhookDeliveries',
          summary: "The endpoint's deliveries of run events with their attempts, newest first, a page at a time",
          description: 'Pages by starting_after (the last id of the previous page) while has_more is true.',
          tags: ['webhooks'],
          params: EndpointIdParamsSchema,
          querystring: DeliveryListQuerySchema,
          response: { 200: Type.Ref('WebhookDeliveryList', { description: 'A page of deliveries' }), ...errorResponses(...COMMON, 'webhook_endpoint_not_found') },
        },
      },
      async (request) => listEndpointDeliveries(deps, requireAuth(request), request.params.endpoint_id, request.query),
    );

    app.post(
      '/v1/webhook-endpoints/:endpoint_id/deliveries/:delivery_id/redeliver',
      {
        config,
        schema: {
          operationId: 'redeliverWebhookDelivery',
          summary: 'Send a given-up (failed) delivery again, with the same event id and body and a fresh retry schedule',
          tags: ['webhooks'],
          params: DeliveryParamsSchema,
          response: {
            200: Type.Ref('WebhookDelivery', { description: 'The delivery, pending again' }),
            ...errorResponses(...COMMON, ...BODY, 'webhook_endpoint_not_found', 'delivery_not_found', 'delivery_not_redeliverable'),
          },
        },
      },
      async (request) => redeliverEndpointDelivery(deps, requireAuth(request), request.params.endpoint_id, request.params.delivery_id),
    );
  };
}
