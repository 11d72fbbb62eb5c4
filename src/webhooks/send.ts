import type { Logger } from 'pino';
import type { AgentPool } from '../net/agents.js';
import { logRefusal, OutboundError, outboundRequest } from '../net/outbound.js';
import { signatureHeader } from './signing.js';

export interface AttemptResult {
  delivered: boolean;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  excerpt: string | null;
  /** When the attempt began (the signature's t). */
  attemptedAt: Date;
}

const EXCERPT_BYTES = 1024;

/**
 * The first bytes of an answer as text fit for a PostgreSQL text column: invalid UTF-8 becomes
 * U+FFFD (by the decoder) and so does NUL, which text columns refuse outright.
 */
export function responseExcerpt(body: Buffer): string | null {
  return body.subarray(0, EXCERPT_BYTES).toString('utf8').replace(/\u0000/g, '\uFFFD') || null;
}

/**
 * One signed POST. Success is a 2xx within the deadline; a redirect is a failure and never
 * followed. The signature is made now, over `t.` + exactly the bytes sent.
 */
export async function sendAttempt(opts: {
  url: string;
  secret: string;
  /** A rotated-out secret still live: signed with too, after the current one. */
  previousSecret?: string | null;
  deliveryId: string;
  eventType: string;
  /** For the log line of a refused host. */
  endpointId?: string;
  body: Buffer;
  timeoutMs: number;
  allowPrivate: boolean;
  signal?: AbortSignal;
  /** Keep-alive connections (the worker's); without, a new connection for this attempt. */
  agents?: AgentPool;
  /** Gets the specific cause of a refused host, which `error` does not tell the endpoint's owner. */
  log: Pick<Logger, 'warn'>;
}): Promise<AttemptResult> {
  const started = Date.now();
  const attemptedAt = new Date(started);
  const t = Math.floor(started / 1000);
  try {
    const res = await outboundRequest(opts.url, {
      method: 'POST',
      body: opts.body,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'Service-Webhooks/1',
        'service-event': opts.eventType,
        'service-delivery': opts.deliveryId,
        'service-signature': signatureHeader(opts.previousSecret ? [opts.secret, opts.previousSecret] : opts.secret, opts.body, t),
      },
      httpsOnly: true,
      maxRedirects: 0,
      maxBytes: 1024 * 1024,
      truncateAt: EXCERPT_BYTES,
      timeoutMs: opts.timeoutMs,
      allowPrivate: opts.allowPrivate,
      ...(opts.signal ? { signal: opts.signal } : {}),
      ...(opts.agents ? { agents: opts.agents } : {}),
    });
    const delivered = res.status >= 200 && res.status < 300;
    return {
      delivered,
      statusCode: res.status,
      error: delivered ? null : res.status >= 300 && res.status < 400 ? `redirect (${res.status}) not followed` : `answered ${res.status}`,
      durationMs: Date.now() - started,
      excerpt: responseExcerpt(res.body),
      attemptedAt,
    };
  } catch (err) {
    logRefusal(opts.log, err, { ...(opts.endpointId ? { endpoint_id: opts.endpointId } : {}), delivery_id: opts.deliveryId, event: opts.eventType });
    const message = err instanceof OutboundError ? err.message : `request failed: ${(err as Error).message}`;
    return { delivered: false, statusCode: null, error: message, durationMs: Date.now() - started, excerpt: null, attemptedAt };
  }
}
