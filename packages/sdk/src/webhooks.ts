import { createHmac, timingSafeEqual } from 'node:crypto';
import type { operations } from './generated/openapi.ts';
import { queryString, type Transport } from './http.ts';
import type {
  CreatedWebhookEndpoint,
  CreateWebhookEndpointBody,
  Deleted,
  UpdateWebhookEndpointBody,
  WebhookEndpoint,
  WebhookDelivery,
  WebhookDeliveryList,
  WebhookEndpointList,
  WebhookEvent,
  ListDeliveriesQuery,
  WebhookTest,
} from './types.ts';

type RotateSecretBody = NonNullable<operations['rotateWebhookEndpointSecret']['requestBody']>['content']['application/json'];

export interface RotateSecretOptions {
  /**
   * How long the secret being replaced keeps signing deliveries beside the new one: 0 to 86400
   * seconds, 86400 when omitted; 0 stops it at once.
   */
  expirePreviousInSeconds?: number;
  signal?: AbortSignal;
}

/** `/v1/webhook-endpoints`: the key needs the webhooks scope and an owner or admin creator. */
export class WebhookEndpoints {
  constructor(private readonly http: Transport) {}

  list(opts: { signal?: AbortSignal } = {}): Promise<WebhookEndpointList> {
    return this.http.request('GET', '/v1/webhook-endpoints', { retry: 'idempotent', signal: opts.signal });
  }

  /** Adds an endpoint; the answer's `signing_secret` is shown only here: store it. */
  create(body: CreateWebhookEndpointBody, opts: { signal?: AbortSignal } = {}): Promise<CreatedWebhookEndpoint> {
    return this.http.request('POST', '/v1/webhook-endpoints', { body, retry: 'refused-only', signal: opts.signal });
  }

  /** Pauses (`enabled: false`, pending deliveries dropped), resumes, or replaces the events. */
  update(id: string, body: UpdateWebhookEndpointBody, opts: { signal?: AbortSignal } = {}): Promise<WebhookEndpoint> {
    return this.http.request('PATCH', `/v1/webhook-endpoints/${encodeURIComponent(id)}`, { body, retry: 'refused-only', signal: opts.signal });
  }

  delete(id: string, opts: { signal?: AbortSignal } = {}): Promise<Deleted> {
    return this.http.request('DELETE', `/v1/webhook-endpoints/${encodeURIComponent(id)}`, { retry: 'refused-only', signal: opts.signal });
  }

  /** One page of the endpoint's deliveries with their attempts, newest first; pass the last id as `starting_after` while `has_more`. */
  deliveries(id: string, query: ListDeliveriesQuery = {}, opts: { signal?: AbortSignal } = {}): Promise<WebhookDeliveryList> {
    return this.http.request('GET', `/v1/webhook-endpoints/${encodeURIComponent(id)}/deliveries${queryString(query)}`, { retry: 'idempotent', signal: opts.signal });
  }

  /** Sends a given-up (failed) delivery again, with the same event id and body. */
  redeliver(id: string, deliveryId: string, opts: { signal?: AbortSignal } = {}): Promise<WebhookDelivery> {
    return this.http.request('POST', `/v1/webhook-endpoints/${encodeURIComponent(id)}/deliveries/${encodeURIComponent(deliveryId)}/redeliver`, {
      retry: 'refused-only',
      signal: opts.signal,
    });
  }

  /**
   * A new signing secret, in the answer's `signing_secret` only: store it. Until the old one
   * expires, each delivery carries a v1 for both, so a receiver with either secret verifies.
   * Never retried once sent: a retry would rotate again, and the secret of the first answer,
   * lost, would become the previous one.
   */
  rotateSecret(id: string, opts: RotateSecretOptions = {}): Promise<CreatedWebhookEndpoint> {
    const body: RotateSecretBody = opts.expirePreviousInSeconds === undefined ? {} : { expire_previous_in_seconds: opts.expirePreviousInSeconds };
    return this.http.request('POST', `/v1/webhook-endpoints/${encodeURIComponent(id)}/rotate-secret`, { body, retry: 'refused-only', signal: opts.signal });
  }

  /** Sends a signed `ping` now and reports how the endpoint answered. */
  test(id: string, opts: { signal?: AbortSignal } = {}): Promise<WebhookTest> {
    return this.http.request('POST', `/v1/webhook-endpoints/${encodeURIComponent(id)}/test`, { retry: 'refused-only', signal: opts.signal });
  }
}

export type WebhookVerificationReason =
  | 'missing_signature'
  | 'malformed_signature'
  | 'signature_mismatch'
  | 'timestamp_too_old'
  | 'timestamp_in_future'
  | 'invalid_payload';

/** Thrown by verifyWebhook: answer the delivery with 400 and do not act on it. */
export class WebhookVerificationError extends Error {
  constructor(
    readonly reason: WebhookVerificationReason,
    message: string,
  ) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

export interface VerifyWebhookOptions {
  /** Largest allowed distance between the signature's timestamp and now, either way (default 300 s). */
  toleranceSeconds?: number;
  /** The time to check against: a Date, or milliseconds since the epoch like Date.now(). */
  now?: Date | number;
}

/**
 * The reference verifier for `Service-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>...]`.
 *
 * Pass the request body exactly as it arrived (a Buffer, or the raw string), not re-serialized
 * JSON: the signature is an HMAC-SHA256, keyed with the endpoint's `whsec_` secret, of `t`, a dot
 * and those bytes. Any one matching v1 value is enough (several appear while a secret rotates);
 * the comparison takes constant time; a timestamp older or newer than the tolerance is refused
 * (a replay). Returns the parsed event; unknown event types and fields are passed through.
 */
export function verifyWebhook(
  rawBody: string | Uint8Array,
  signatureHeader: string | string[] | null | undefined,
  secret: string,
  opts: VerifyWebhookOptions = {},
): WebhookEvent {
  const header = Array.isArray(signatureHeader) ? signatureHeader.join(',') : signatureHeader;
  if (!header || !header.trim()) throw new WebhookVerificationError('missing_signature', 'No Service-Signature header');
  if (!secret) throw new TypeError('verifyWebhook needs the endpoint signing secret (whsec_...)');

  const timestamps: string[] = [];
  const signatures: string[] = [];
  for (const item of header.split(',')) {
    const eq = item.indexOf('=');
    if (eq <= 0) continue;
    const key = item.slice(0, eq).trim();
    const value = item.slice(eq + 1).trim();
    if (key === 't') timestamps.push(value);
    else if (key === 'v1') signatures.push(value);
  }
  const [t] = timestamps;
  if (timestamps.length !== 1 || t === undefined || !/^\d{1,12}$/.test(t)) {
    throw new WebhookVerificationError('malformed_signature', 'The Service-Signature header needs exactly one t=<unix seconds>');
  }
  if (signatures.length === 0) throw new WebhookVerificationError('malformed_signature', 'The Service-Signature header has no v1 signature');

  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : rawBody;
  const expected = Buffer.from(createHmac('sha256', secret).update(`${t}.`, 'utf8').update(body).digest('hex'), 'utf8');
  let matched = false;
  for (const candidate of signatures) {
    const given = Buffer.from(candidate.toLowerCase(), 'utf8');
    // Lengths are public (64 hex characters); the bytes are compared in constant time.
    if (given.length === expected.length && timingSafeEqual(given, expected)) matched = true;
  }
  if (!matched) {
    throw new WebhookVerificationError('signature_mismatch', 'No v1 signature matches this body and secret (was the body re-serialized, or is it another endpoint\'s secret?)');
  }

  const tolerance = opts.toleranceSeconds ?? 300;
  const nowMs = opts.now instanceof Date ? opts.now.getTime() : (opts.now ?? Date.now());
  const age = nowMs / 1000 - Number(t);
  if (age > tolerance) throw new WebhookVerificationError('timestamp_too_old', `The signature is ${Math.floor(age)} s old (tolerance ${tolerance} s): a replay?`);
  if (-age > tolerance) throw new WebhookVerificationError('timestamp_in_future', `The signature is ${Math.ceil(-age)} s in the future (tolerance ${tolerance} s)`);

  let event: unknown;
  try {
    event = JSON.parse(Buffer.from(body).toString('utf8'));
  } catch {
    throw new WebhookVerificationError('invalid_payload', 'The signed body is not JSON');
  }
  if (typeof event !== 'object' || event === null || Array.isArray(event)) throw new WebhookVerificationError('invalid_payload', 'The signed body is not an event object');
  const e = event as Record<string, unknown>;
  if (typeof e.id !== 'string' || typeof e.type !== 'string') throw new WebhookVerificationError('invalid_payload', 'The event has no id or type');
  if (typeof e.data !== 'object' || e.data === null) e.data = {};
  return e as WebhookEvent;
}
