import { Type, type Static } from 'typebox';
import { PathUuid } from '../http/schemas.js';

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
  { additionalProperties: false },
);
export type CreateEndpointBody = Static<typeof CreateEndpointBodySchema>;

export const UpdateEndpointBodySchema = Type.Object(
  {
    enabled: Type.Optional(Type.Union([Type.Boolean(), Type.Null()], { description: 'false pauses and drops pending deliveries; true resumes' })),
    events: Type.Optional(Type.Union([EventList, Type.Null()], { description: "Replaces the endpoint's events" })),
  },
  { additionalProperties: false },
);
export type UpdateEndpointBody = Static<typeof UpdateEndpointBodySchema>;

// PathUuid, not a bare uuid format: Ajv's admits urn:uuid:..., which PostgreSQL refuses (a 500).
export const EndpointIdParamsSchema = Type.Object({ endpoint_id: PathUuid() });

const endpointFields = {
  object: Type.Literal('webhook_endpoint'),
  id: Type.String({ format: 'uuid' }),
  url: Type.String(),
  events: Type.Array(Type.String()),
  enabled: Type.Boolean({ description: 'A paused endpoint receives nothing, and runs that finish while it is paused are never sent later' }),
  created_at: Type.String({ format: 'date-time' }),
};

export const WebhookEndpointSchema = Type.Object(endpointFields, {
  additionalProperties: false,
  $id: 'WebhookEndpoint',
  title: 'webhook_endpoint',
});
export type WebhookEndpoint = Static<typeof WebhookEndpointSchema>;

export const CreatedWebhookEndpointSchema = Type.Object(
  { ...endpointFields, signing_secret: Type.String({ description: 'Shown once; verifies the Service-Signature header' }) },
  { additionalProperties: false, $id: 'CreatedWebhookEndpoint', title: 'webhook_endpoint (with signing_secret)' },
);
export type CreatedWebhookEndpoint = Static<typeof CreatedWebhookEndpointSchema>;

export const WebhookEndpointListSchema = Type.Object(
  { object: Type.Literal('list'), data: Type.Array(Type.Ref('WebhookEndpoint')) },
  { additionalProperties: false, $id: 'WebhookEndpointList', title: 'list of webhook_endpoint' },
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
  { additionalProperties: false, $id: 'WebhookTest', title: 'webhook_test' },
);
export type WebhookTest = Static<typeof WebhookTestSchema>;

export const DeletedSchema = Type.Object(
  { object: Type.Literal('deleted'), id: Type.String(), deleted: Type.Boolean() },
  { additionalProperties: false, $id: 'Deleted', title: 'deleted' },
);
