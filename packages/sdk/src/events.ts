// GET /v1/events: the team's events as a stream, with no webhook endpoint (what toolrun-cli
// listen forwards to a local server), and the signing side of webhooks for such forwarding.
import { createHmac, randomBytes } from 'node:crypto';
import type { Transport } from './http.ts';
import { readEventStream, type StreamOptions } from './sse.ts';
import type { WebhookEvent } from './types.ts';

export interface StreamedEvent {
  /** The event id: the same as a webhook delivery of this event carries. */
  id: string;
  type: string;
  /** The event exactly as a webhook delivery's body carries it: sign and forward these bytes. */
  body: string;
  event: WebhookEvent;
}

export interface EventStreamOptions extends StreamOptions {
  /**
   * Last-Event-ID too old or unknown (events are kept for resuming 24 hours): called with the
   * error; return true to carry on from now (events in between are lost), false to stop with it.
   * Default: carry on.
   */
  onResumeRefused?: (err: Error) => boolean;
}

/** How many recent ids are remembered to drop repeats (delivery is at least once). */
const SEEN_IDS = 1000;

export class Events {
  constructor(private readonly http: Transport) {}

  /**
   * The team's events (run.succeeded, run.failed, run.canceled, ...) from now on, as they happen,
   * for as long as the loop reads (break out of it, or abort the signal, to stop). Reconnects
   * with Last-Event-ID when the connection drops, and skips repeats. Needs the webhooks scope.
   */
  async *stream(opts: EventStreamOptions = {}): AsyncGenerator<StreamedEvent> {
    const seen = new Set<string>();
    const refused = opts.onResumeRefused ?? (() => true);
    for await (const m of readEventStream(this.http, '/v1/events', { ...opts, onResumeRefused: refused })) {
      if (m.id === null || seen.has(m.id)) continue;
      seen.add(m.id);
      if (seen.size > SEEN_IDS) seen.delete(seen.values().next().value as string);
      let event: WebhookEvent;
      try {
        event = JSON.parse(m.data) as WebhookEvent;
      } catch {
        continue;
      }
      yield { id: m.id, type: m.event, body: m.data, event };
    }
  }
}

/** A new signing secret in the service's format (`whsec_` and 40 characters). */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(30).toString('base64url')}`;
}

/**
 * The Service-Signature header for a body, as the service signs deliveries:
 * `t=<unix seconds>,v1=<hex HMAC-SHA256 keyed with the secret of "t." + the raw body>`.
 * verifyWebhook accepts exactly this.
 */
export function signWebhook(body: string | Uint8Array, secret: string, timestampSeconds = Math.floor(Date.now() / 1000)): string {
  const mac = createHmac('sha256', secret).update(`${timestampSeconds}.`, 'utf8').update(body).digest('hex');
  return `t=${timestampSeconds},v1=${mac}`;
}
