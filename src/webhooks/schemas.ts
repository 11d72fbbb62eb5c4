import { Type, type Static } from 'typebox';
import { EXAMPLE_DELIVERY_ID, EXAMPLE_ENDPOINT, EXAMPLE_ENDPOINT_ID, EXAMPLE_EVENT_ID } from '../core/examples.js';
import { PathUuid } from '../core/schemas.js';

export const RUN_EVENT_TYPES = ['run.succeeded', 'run.failed', 'run.canceled'] as const;
export type RunEventType = (typeof RUN_EVENT_TYPES)[number];


const EventList = Type.Array(Type.String({ enum: [...RUN_EVENT_TYPES] }), {
  minItems: 1,
  uniqueItems: true,
  description: 'Any of run.succeeded, run.failed, run.canceled; all three when omitted or null',
});

export const CreateEndpointBodySchema = Type.Object(
  {
    // Length and scheme are checked in the handler so each gets its own error code.
    url: Type.String({ description: 'An HTTPS URL on a public host, at most 2048 characters' }),
    events: Type.Optional(Type.Union([EventList, Type.Null()])),
  },
  { additionalProperties: false, examples: [{ url: EXAMPLE_ENDPOINT.url, events: EXAMPLE_ENDPOINT.events }] },
);
export type CreateEndpointBody = Static<typeof CreateEndpointBodySchema>;

export const UpdateEndpointBodySchema = Type.Object(
  {
    enabled: Type.Optional(Type.Union([Type.Boolean(), Type.Null()], { description: 'false pauses and drops pending deliveries; true resumes' })),
    events: Type.Optional(Type.Union([EventList, Type.Null()], { description: "Replaces the endpoint's events" })),
  },
  { additionalProperties: false, examples: [{ enabled: false }] },
);
export type UpdateEndpointBody = Static<typeof UpdateEndpointBodySchema>;

// PathUuid, not a bare uuid format: Ajv's admits urn:uuid:..., which PostgreSQL refuses (a 500).
export const EndpointIdParamsSchema = Type.Object({ endpoint_id: PathUuid('The id of one of the team\'s webhook endpoints') });

export const PAUSED_REASONS = ['failing', 'gone'] as const;
export type PausedReason = (typeof PAUSED_REASONS)[number];

const endpointFields = {
  object: Type.Literal('webhook_endpoint'),
  id: Type.String({ format: 'uuid' }),
  url: Type.String(),
  events: Type.Array(Type.String()),
  enabled: Type.Boolean({ description: 'A paused endpoint receives nothing, and runs that finish while it is paused are never sent later' }),
  created_at: Type.String({ format: 'date-time' }),
  paused_reason: Type.Optional(
    Type.String({
      enum: [...PAUSED_REASONS],
      description:
        'Only on an endpoint the service paused itself: failing (every delivery attempt failed for 5 days), gone (it answered 410 Gone). Resuming (enabled: true) clears it',
    }),
  ),
  paused_at: Type.Optional(Type.String({ format: 'date-time', description: 'With paused_reason: when the service paused the endpoint' })),
  previous_secret_expires_at: Type.Optional(
    Type.String({ format: 'date-time', description: 'Only after a secret rotation, while the previous secret still signs each delivery (beside the new one): until when' }),
  ),
};

export const WebhookEndpointSchema = Type.Object(endpointFields, {
  additionalProperties: false,
  $id: 'WebhookEndpoint',
  title: 'webhook_endpoint',
  examples: [EXAMPLE_ENDPOINT],
});
export type WebhookEndpoint = Static<typeof WebhookEndpointSchema>;

export const CreatedWebhookEndpointSchema = Type.Object(
  { ...endpointFields, signing_secret: Type.String({ description: 'Shown once; verifies the Service-Signature header' }) },
  {
    additionalProperties: false,
    $id: 'CreatedWebhookEndpoint',
    title: 'webhook_endpoint (with signing_secret)',
    examples: [{ ...EXAMPLE_ENDPOINT, signing_secret: 'whsec_Jq3vX9kL2mN8pR4sT6uW0yA1bC5dE7fG9hI2jK4l' }],
  },
);
export type CreatedWebhookEndpoint = Static<typeof CreatedWebhookEndpointSchema>;

export const MAX_EXPIRE_PREVIOUS_SECONDS = 86_400;

export const RotateSecretBodySchema = Type.Object(
  {
    expire_previous_in_seconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_EXPIRE_PREVIOUS_SECONDS,
        default: MAX_EXPIRE_PREVIOUS_SECONDS,
        description: 'How long the secret being replaced keeps signing deliveries beside the new one, 0 to 86400 seconds (0: it stops at once)',
      }),
    ),
  },
  { additionalProperties: false, examples: [{ expire_previous_in_seconds: 3600 }] },
);
export type RotateSecretBody = Static<typeof RotateSecretBodySchema>;

export const WebhookEndpointListSchema = Type.Object(
  { object: Type.Literal('list'), data: Type.Array(Type.Ref('WebhookEndpoint')) },
  { additionalProperties: false, $id: 'WebhookEndpointList', title: 'list of webhook_endpoint', examples: [{ object: 'list', data: [EXAMPLE_ENDPOINT] }] },
);

export const WebhookTestSchema = Type.Object(
  {
    object: Type.Literal('webhook_test'),
    delivery_id: Type.String({ description: 'The Service-Delivery header of the ping' }),
    delivered: Type.Boolean({ description: 'true when the endpoint answered 2xx' }),
    response_code: Type.Union([Type.Integer(), Type.Null()]),
    duration_ms: Type.Integer(),
    error: Type.Union([Type.String(), Type.Null()]),
  },
  {
    additionalProperties: false,
    $id: 'WebhookTest',
    title: 'webhook_test',
    examples: [
      { object: 'webhook_test', delivery_id: '2d4c6e8a-1b3f-4d5e-a7c9-0e2f4a6c8e1b', delivered: true, response_code: 200, duration_ms: 182, error: null },
    ],
  },
);
export type WebhookTest = Static<typeof WebhookTestSchema>;

const EXAMPLE_DELIVERY = {
  object: 'webhook_delivery',
  id: EXAMPLE_DELIVERY_ID,
  event_id: EXAMPLE_EVENT_ID,
  event_type: 'run.succeeded',
  status: 'failed',
  created_at: '2025-05-01T09:30:04.000Z',
  attempts: [{ attempted_at: '2025-05-01T09:30:04.120Z', status_code: 500, duration_ms: 84, error: 'HTTP 500' }],
};

export const DELIVERY_STATES = ['pending', 'succeeded', 'failed', 'dropped'] as const;

export const WebhookDeliverySchema = Type.Object(
  {
    object: Type.Literal('webhook_delivery'),
    id: Type.String({ format: 'uuid', description: 'The Service-Delivery header of every attempt' }),
    event_id: Type.String({ format: 'uuid', description: "The event's id (the body's id)" }),
    event_type: Type.String({ description: 'run.succeeded, run.failed or run.canceled' }),
    status: Type.String({
      enum: [...DELIVERY_STATES],
      description: 'pending (to be sent or retried), succeeded (answered 2xx), failed (given up after the last retry; redeliverable), dropped (the endpoint was paused or deleted first)',
    }),
    created_at: Type.String({ format: 'date-time' }),
    attempts: Type.Array(
      Type.Object(
        {
          attempted_at: Type.String({ format: 'date-time' }),
          status_code: Type.Union([Type.Integer(), Type.Null()], { description: 'null when no answer came' }),
          duration_ms: Type.Integer(),
          error: Type.Union([Type.String(), Type.Null()]),
        },
        { additionalProperties: false },
      ),
      { description: 'Oldest first' },
    ),
  },
  { additionalProperties: false, $id: 'WebhookDelivery', title: 'webhook_delivery', examples: [EXAMPLE_DELIVERY] },
);
export type WebhookDelivery = Static<typeof WebhookDeliverySchema>;

export const WebhookDeliveryListSchema = Type.Object(
  {
    object: Type.Literal('list'),
    data: Type.Array(Type.Ref('WebhookDelivery'), { description: 'Newest first' }),
    has_more: Type.Boolean({ description: 'true when more follow: pass the last id as starting_after' }),
  },
  { additionalProperties: false, $id: 'WebhookDeliveryList', title: 'list of webhook_delivery', examples: [{ object: 'list', data: [EXAMPLE_DELIVERY], has_more: false }] },
);

export const DeliveryListQuerySchema = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Deliveries per page, 1 to 100' })),
    starting_after: Type.Optional(PathUuid('The id of the last delivery of the previous page')),
    status: Type.Optional(Type.String({ enum: [...DELIVERY_STATES], description: 'Only deliveries in this state' })),
  },
  { additionalProperties: false },
);
export type DeliveryListQuery = Static<typeof DeliveryListQuerySchema>;

export const DeliveryParamsSchema = Type.Object({
  endpoint_id: PathUuid('The id of one of the team\'s webhook endpoints'),
  delivery_id: PathUuid('The id of one of its deliveries'),
});

export const DeletedSchema = Type.Object(
  {
    object: Type.Literal('deleted'),
    id: Type.String({ description: 'Id of what was deleted' }),
    // The spec: optional, default true (this service always sends it).
    deleted: Type.Optional(Type.Boolean({ default: true })),
  },
  { additionalProperties: false, $id: 'Deleted', title: 'deleted', examples: [{ object: 'deleted', id: EXAMPLE_ENDPOINT_ID, deleted: true }] },
);
