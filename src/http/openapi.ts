import type { FastifyInstance } from 'fastify';
import type { TSchema } from 'typebox';
import { attachSamples } from './samples/index.js';

type Json = Record<string, unknown>;

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The request headers as the document states them, where the handler (not the schema) checks
     * their bounds so as to report them in its own order.
     */
    documentedHeaders?: TSchema;
  }
}

/** The document's tags, in the order readers meet them; every tag an operation uses is listed. */
const TAGS: { name: string; description: string }[] = [
  { name: 'me', description: 'The team and API key making the request' },
  { name: 'tools', description: 'The tools this key can see, their inputs and price ranges' },
  { name: 'files', description: 'Uploading media in parts, for the media inputs of runs' },
  { name: 'runs', description: 'Pricing, starting, following and canceling runs, and downloading their outputs' },
  { name: 'webhooks', description: 'Endpoints that receive signed run events' },
  { name: 'system', description: 'Liveness, readiness and this document' },
];

/**
 * @fastify/swagger's per-route transform: secured routes name the bearer scheme, and routes with
 * documentedHeaders state those instead of the headers their schema validates.
 */
export function openApiTransform({ schema, url, route }: { schema: unknown; url: string; route: { config?: unknown } }): {
  schema: Json;
  url: string;
} {
  const out = { ...(schema as Json) };
  // The console's JSON API has its own document (GET /console/api/openapi.json); its pages none.
  if (url === '/console' || url.startsWith('/console/')) return { schema: { ...out, hide: true }, url };
  const config = (route.config ?? {}) as { scope?: string; documentedHeaders?: TSchema };
  if (config.scope) out.security = [{ bearerAuth: [] }];
  if (config.documentedHeaders) out.headers = config.documentedHeaders;
  return { schema: out, url };
}

/**
 * What the service POSTs to webhook endpoints (OpenAPI 3.1 `webhooks`): the event envelope with
 * the run for run.* events and the endpoint id for ping. Receivers must ignore unknown types.
 */
function webhookDeliveries(): { schema: Json; webhooks: Json } {
  const schema: Json = {
    type: 'object',
    title: 'event',
    required: ['id', 'object', 'type', 'created_at', 'data'],
    properties: {
      id: { type: 'string', description: 'Event id: the same on every retry; store handled ids and skip repeats' },
      object: { type: 'string', enum: ['event'] },
      type: { type: 'string', description: 'run.succeeded, run.failed, run.canceled or ping; more may be added' },
      created_at: { type: 'string', format: 'date-time' },
      data: {
        type: 'object',
        properties: {
          run: { $ref: '#/components/schemas/Run' },
          webhook_endpoint_id: { type: 'string', description: 'On ping events' },
        },
      },
    },
  };
  const header = (description: string) => ({ required: true, schema: { type: 'string' }, description });
  const delivery = (summary: string) => ({
    post: {
      summary,
      parameters: [
        { name: 'User-Agent', in: 'header', ...header('Service-Webhooks/1') },
        { name: 'Service-Event', in: 'header', ...header('The event type') },
        { name: 'Service-Delivery', in: 'header', ...header('Delivery id (UUID), the same on every attempt') },
        {
          name: 'Service-Signature',
          in: 'header',
          ...header('t=<unix seconds>,v1=<hex HMAC-SHA256 with the signing secret of "t." + the raw body>'),
        },
      ],
      requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/Event' } } } },
      responses: {
        '200': { description: 'Any 2xx within 10 s is success; anything else (redirects included) is retried after 60, 300, 1800, 7200 and 43200 s' },
      },
    },
  });
  return {
    schema,
    webhooks: {
      'run.succeeded': delivery('A run finished and its outputs are ready'),
      'run.failed': delivery('A run stopped with an error; its hold was released'),
      'run.canceled': delivery('A run was canceled; its hold was released'),
      ping: delivery('Sent by POST /v1/webhook-endpoints/{endpoint_id}/test'),
    },
  };
}

/**
 * The generated document plus what Fastify's schemas cannot say: the X-Request-Id header on
 * every response, the RateLimit headers on authenticated ones, Retry-After on 429 and 503, the
 * webhook deliveries, and the reference's examples and code samples (src/http/samples).
 */
export function buildOpenApiDocument(app: FastifyInstance): Json {
  const doc = structuredClone(app.swagger()) as unknown as Json;
  const components = (doc.components ??= {}) as Json;
  const deliveries = webhookDeliveries();
  ((components.schemas ??= {}) as Json).Event = deliveries.schema;
  doc.webhooks = deliveries.webhooks;
  components.headers = {
    XRequestId: { description: 'Unique id of this request; equals error.request_id on errors.', schema: { type: 'string' } },
    RateLimitLimit: { description: "The key's requests per minute.", schema: { type: 'integer' } },
    RateLimitRemaining: { description: 'Requests left in the bucket now.', schema: { type: 'integer' } },
    RateLimitReset: { description: 'Seconds until the bucket is full again.', schema: { type: 'integer' } },
    RetryAfter: { description: 'Seconds to wait before retrying.', schema: { type: 'integer', minimum: 1 } },
  };
  const schemas = components.schemas as Record<string, Json>;
  const paths = (doc.paths ?? {}) as Record<string, Record<string, Json>>;
  const used = new Set<string>();
  for (const ops of Object.values(paths)) {
    for (const op of Object.values(ops)) {
      for (const tag of (op.tags ?? []) as string[]) used.add(tag);
      const secured = Array.isArray(op.security) && op.security.length > 0;
      for (const [status, response] of Object.entries((op.responses ?? {}) as Record<string, Json>)) {
        if (status.startsWith('2')) exampleFromComponent(response, schemas);
        const headers = (response.headers ??= {}) as Json;
        headers['X-Request-Id'] = { $ref: '#/components/headers/XRequestId' };
        if (secured) {
          headers['RateLimit-Limit'] = { $ref: '#/components/headers/RateLimitLimit' };
          headers['RateLimit-Remaining'] = { $ref: '#/components/headers/RateLimitRemaining' };
          headers['RateLimit-Reset'] = { $ref: '#/components/headers/RateLimitReset' };
        }
        // 429 (rate limited) and 503 (service briefly unavailable) both tell the client when to retry.
        if (status === '429' || status === '503') headers['Retry-After'] = { $ref: '#/components/headers/RetryAfter' };
      }
    }
  }
  doc.tags = [...TAGS.filter((t) => used.has(t.name)), ...[...used].filter((name) => !TAGS.some((t) => t.name === name)).map((name) => ({ name }))];
  attachSamples(doc);
  return doc;
}

/**
 * A success response whose schema is a component gets the component's first example as its own
 * (a $ref in a response cannot carry one; the component keeps it for readers of the schema).
 */
function exampleFromComponent(response: Json, schemas: Record<string, Json>): void {
  const media = (response.content as Record<string, Json> | undefined)?.['application/json'];
  const ref = (media?.schema as Json | undefined)?.$ref;
  if (!media || media.example !== undefined || typeof ref !== 'string') return;
  const examples = schemas[ref.replace('#/components/schemas/', '')]?.examples;
  if (Array.isArray(examples) && examples.length > 0) media.example = examples[0];
}
