import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Role } from '../auth/repository.js';
import type { Config } from '../config/config.js';
import type { Db } from '../db/pool.js';
import { ApiError, invalidRequest, type FieldError } from '../core/errors.js';
import { logRefusal, OutboundError, parseOutboundUrl, vetHost } from '../net/outbound.js';
import {
  deleteEndpoint,
  dropPending,
  endpointResource,
  getEndpoint,
  insertEndpoint,
  listEndpoints,
  recordAttempt,
  rotateSigningSecret,
  updateEndpoint,
} from './repository.js';
import {
  RUN_EVENT_TYPES,
  type CreateEndpointBody,
  type CreatedWebhookEndpoint,
  type DeliveryListQuery,
  MAX_EXPIRE_PREVIOUS_SECONDS,
  type RotateSecretBody,
  type UpdateEndpointBody,
  type WebhookDelivery,
  type WebhookEndpoint,
  type WebhookTest,
} from './schemas.js';
import { deliveriesPage, isEndpointDelivery, redeliverDelivery, type DeliveryView } from './admin.js';
import { AdminError } from '../teams/repository.js';
import { sendAttempt } from './send.js';
import { newSigningSecret } from './signing.js';

export const MAX_ENDPOINTS_PER_TEAM = 10;
export const MAX_URL_LENGTH = 2048;

export interface WebhooksDeps {
  config: Config;
  db: Db;
}

/**
 * Who acts: a key's member (/v1, where the key's scope was checked first) or a signed-in member
 * (the console). Every rule below holds for both.
 */
export interface Actor {
  teamId: string;
  role: Role;
}

/** Endpoint operations need an owner or admin behind the key or the session. */
function requireAdmin(auth: Actor): void {
  if (auth.role !== 'owner' && auth.role !== 'admin') {
    throw new ApiError('insufficient_role', "Webhook endpoints are managed by a team owner or admin; this key's member is not one.", {
      details: { required_role: 'admin', role: auth.role },
    });
  }
}

function notFound(id: string): ApiError {
  return new ApiError('webhook_endpoint_not_found', `No webhook endpoint ${id} in this team.`);
}

/** What a request-scoped operation logs with (the request's logger). */
export type RequestLog = Pick<Logger, 'warn'>;

async function checkUrl(config: Config, raw: string, log: RequestLog): Promise<FieldError | null> {
  const loc = ['body', 'url'];
  if (raw.length > MAX_URL_LENGTH) return { loc, message: `must be at most ${MAX_URL_LENGTH} characters`, code: 'url_too_long' };
  // The URL parser drops tabs, newlines and surrounding spaces and escapes other controls, so the
  // stored text would not be the URL used (and NUL cannot be stored at all): refuse them.
  if (/[\u0000-\u0020\u007f]/.test(raw)) {
    return { loc, message: 'must be an absolute https:// URL without spaces or control characters', code: 'url_not_https' };
  }
  let url: URL;
  try {
    url = parseOutboundUrl(raw, true);
  } catch (err) {
    const scheme = /^[a-z][a-z0-9+.-]*:/i.test(raw);
    return {
      loc,
      message: err instanceof OutboundError && scheme && !raw.toLowerCase().startsWith('https:') ? 'must be an https:// URL' : 'must be an absolute https:// URL without credentials',
      code: 'url_not_https',
    };
  }
  // Resolution is held to the delivery deadline: a name whose DNS never answers cannot hold the request.
  const timeoutMs = config.webhooks.timeoutMs;
  try {
    await vetHost(url.hostname, { allowPrivate: config.allowPrivateNetwork, signal: AbortSignal.timeout(timeoutMs), timeoutMs });
  } catch (err) {
    logRefusal(log, err, { url_host: url.hostname });
    const why = err instanceof OutboundError && err.code === 'url_not_public' ? err.message : `the host ${url.hostname} did not resolve within ${timeoutMs} ms`;
    return { loc, message: `must be on a public host: ${why}`, code: 'url_not_public' };
  }
  return null;
}

export async function listTeamEndpoints(deps: WebhooksDeps, auth: Actor): Promise<WebhookEndpoint[]> {
  requireAdmin(auth);
  return (await listEndpoints(deps.db.pool, auth.teamId)).map(endpointResource);
}

export async function createEndpoint(deps: WebhooksDeps, auth: Actor, body: CreateEndpointBody, log: RequestLog): Promise<CreatedWebhookEndpoint> {
  requireAdmin(auth);
  const urlError = await checkUrl(deps.config, body.url, log);
  if (urlError) throw invalidRequest([urlError]);
  const events = body.events ?? [...RUN_EVENT_TYPES];
  return deps.db.tx(async (tx) => {
    // The team row lock makes the per-team limit hold under concurrent creates.
    await tx.query('SELECT 1 FROM teams WHERE id = $1::uuid FOR UPDATE', [auth.teamId]);
    if ((await listEndpoints(tx, auth.teamId)).length >= MAX_ENDPOINTS_PER_TEAM) {
      throw new ApiError('webhook_endpoint_limit_reached', `A team has at most ${MAX_ENDPOINTS_PER_TEAM} webhook endpoints; delete one first.`, {
        details: { limit: MAX_ENDPOINTS_PER_TEAM },
      });
    }
    const secret = newSigningSecret();
    const row = await insertEndpoint(tx, { id: randomUUID(), teamId: auth.teamId, url: body.url, events, secret });
    return { ...endpointResource(row), signing_secret: secret };
  });
}

export async function patchEndpoint(deps: WebhooksDeps, auth: Actor, id: string, body: UpdateEndpointBody): Promise<WebhookEndpoint> {
  requireAdmin(auth);
  return deps.db.tx(async (tx) => {
    const existing = await getEndpoint(tx, auth.teamId, id, { lock: true });
    if (!existing) throw notFound(id);
    const changes: { enabled?: boolean; events?: string[] } = {};
    if (typeof body.enabled === 'boolean') changes.enabled = body.enabled;
    if (Array.isArray(body.events)) changes.events = body.events;
    const row = Object.keys(changes).length ? await updateEndpoint(tx, id, changes) : existing;
    if (existing.enabled && changes.enabled === false) await dropPending(tx, id);
    return endpointResource(row);
  });
}

/**
 * A new signing secret, returned only here. The replaced one keeps signing beside it (each
 * delivery carries a v1 per live secret) for `expire_previous_in_seconds`, so receivers can
 * switch without refusing a delivery.
 */
export async function rotateEndpointSecret(deps: WebhooksDeps, auth: Actor, id: string, body: RotateSecretBody): Promise<CreatedWebhookEndpoint> {
  requireAdmin(auth);
  return deps.db.tx(async (tx) => {
    if (!(await getEndpoint(tx, auth.teamId, id, { lock: true }))) throw notFound(id);
    const secret = newSigningSecret();
    const row = await rotateSigningSecret(tx, id, secret, body.expire_previous_in_seconds ?? MAX_EXPIRE_PREVIOUS_SECONDS);
    return { ...endpointResource(row), signing_secret: secret };
  });
}

export async function removeEndpoint(deps: WebhooksDeps, auth: Actor, id: string): Promise<{ object: 'deleted'; id: string; deleted: boolean }> {
  requireAdmin(auth);
  return deps.db.tx(async (tx) => {
    const existing = await getEndpoint(tx, auth.teamId, id, { lock: true });
    if (!existing) throw notFound(id);
    await deleteEndpoint(tx, id);
    await dropPending(tx, id);
    return { object: 'deleted', id, deleted: true };
  });
}

/** Sends a signed ping now (paused endpoints too) and reports how the endpoint answered. */
export async function testEndpoint(deps: WebhooksDeps, auth: Actor, id: string, log: RequestLog): Promise<WebhookTest> {
  requireAdmin(auth);
  const endpoint = await getEndpoint(deps.db.pool, auth.teamId, id);
  if (!endpoint) throw notFound(id);
  const deliveryId = randomUUID();
  const body = Buffer.from(
    JSON.stringify({
      id: randomUUID(),
      object: 'event',
      type: 'ping',
      created_at: new Date().toISOString(),
      data: { webhook_endpoint_id: endpoint.id },
    }),
  );
  const result = await sendAttempt({
    url: endpoint.url,
    secret: endpoint.signing_secret,
    previousSecret: endpoint.previous_signing_secret,
    deliveryId,
    eventType: 'ping',
    body,
    timeoutMs: deps.config.webhooks.timeoutMs,
    allowPrivate: deps.config.allowPrivateNetwork,
    log,
  });
  await recordAttempt(deps.db.pool, {
    deliveryId,
    endpointId: endpoint.id,
    eventType: 'ping',
    statusCode: result.statusCode,
    error: result.error,
    durationMs: result.durationMs,
    excerpt: result.excerpt,
    attemptedAt: result.attemptedAt,
  });
  return {
    object: 'webhook_test',
    delivery_id: deliveryId,
    delivered: result.delivered,
    response_code: result.statusCode,
    duration_ms: result.durationMs,
    error: result.error,
  };
}

/** /v1's name for a delivery's state: the table's `delivered` is `succeeded`. */
function deliveryResource(d: DeliveryView): WebhookDelivery {
  return { object: 'webhook_delivery', ...d, status: d.status === 'delivered' ? 'succeeded' : d.status };
}

/** A page of an endpoint's deliveries, newest first; `starting_after` must be one of them. */
export async function listEndpointDeliveries(
  deps: WebhooksDeps,
  auth: Actor,
  endpointId: string,
  q: DeliveryListQuery,
): Promise<{ object: 'list'; data: WebhookDelivery[]; has_more: boolean }> {
  requireAdmin(auth);
  if (!(await getEndpoint(deps.db.pool, auth.teamId, endpointId))) throw notFound(endpointId);
  if (q.starting_after !== undefined && !(await isEndpointDelivery(deps.db.pool, endpointId, q.starting_after))) {
    throw invalidRequest([{ loc: ['query', 'starting_after'], message: "is not a delivery of this endpoint", code: 'not_found' }]);
  }
  const limit = q.limit ?? 20;
  const status = q.status === 'succeeded' ? 'delivered' : (q.status as DeliveryView['status'] | undefined);
  const rows = await deliveriesPage(deps.db.pool, endpointId, { limit, startingAfter: q.starting_after, status });
  return { object: 'list', data: rows.slice(0, limit).map(deliveryResource), has_more: rows.length > limit };
}

/** Sends a given-up (failed) delivery again with the same event id and body; the delivery as it now is. */
export async function redeliverEndpointDelivery(deps: WebhooksDeps, auth: Actor, endpointId: string, deliveryId: string): Promise<WebhookDelivery> {
  requireAdmin(auth);
  if (!(await getEndpoint(deps.db.pool, auth.teamId, endpointId))) throw notFound(endpointId);
  try {
    await redeliverDelivery(deps.db.pool, endpointId, deliveryId);
  } catch (err) {
    if (!(err instanceof AdminError)) throw err;
    if (err.reason === 'not_found') throw new ApiError('delivery_not_found', `No delivery ${deliveryId} of this endpoint.`);
    throw new ApiError('delivery_not_redeliverable', `${err.message.charAt(0).toUpperCase()}${err.message.slice(1)}.`);
  }
  const [row] = await deliveriesPage(deps.db.pool, endpointId, { limit: 1, only: deliveryId });
  if (!row) throw new Error(`delivery ${deliveryId} vanished after redelivery`);
  return deliveryResource(row);
}

