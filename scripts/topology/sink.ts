// The topology's webhook receiver: one HTTPS server, one path per webhook endpoint, which
// verifies each delivery's signature against that endpoint's secret, records it, and answers 500
// to the first attempt of some deliveries so that retries happen during the load.
import { createHash } from 'node:crypto';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { verifySignature } from '../../test/helpers/webhooks.js';

export interface SinkRequest {
  /** The endpoint label (the last path segment). */
  endpoint: string;
  eventId: string;
  type: string;
  runId: string | null;
  runStatus: string | null;
  deliveryId: string;
  signatureOk: boolean;
  /** What we answered. */
  status: number;
}

export class WebhookSink {
  readonly requests: SinkRequest[] = [];
  private readonly secrets = new Map<string, string>();
  private readonly seenDeliveries = new Set<string>();
  private port = 0;

  private constructor(
    private readonly server: https.Server,
    readonly host: string,
  ) {}

  /**
   * Listens on host with the given certificate. `failFirstOneIn`: the first attempt of about one
   * delivery in that many (chosen by a hash of its delivery id) is answered 500; 0 fails none.
   */
  static async start(host: string, tls: { cert: string; key: string }, failFirstOneIn: number): Promise<WebhookSink> {
    let sink: WebhookSink | null = null;
    const server = https.createServer({ cert: tls.cert, key: tls.key }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const status = sink ? sink.receive(req.url ?? '', req.headers, Buffer.concat(chunks), failFirstOneIn) : 503;
        res.writeHead(status).end();
      });
    });
    sink = new WebhookSink(server, host);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, host, () => resolve());
    });
    sink.port = (server.address() as AddressInfo).port;
    return sink;
  }

  url(endpoint: string): string {
    return `https://${this.host}:${this.port}/hooks/${endpoint}`;
  }

  setSecret(endpoint: string, secret: string): void {
    this.secrets.set(endpoint, secret);
  }

  private receive(path: string, headers: NodeJS.Dict<string | string[]>, body: Buffer, failFirstOneIn: number): number {
    const endpoint = path.split('/').pop() ?? '';
    const deliveryId = String(headers['service-delivery'] ?? '');
    const secret = this.secrets.get(endpoint);
    const signatureOk = secret !== undefined && verifySignature(secret, body, String(headers['service-signature'] ?? '')).ok;
    let event: { id?: string; type?: string; data?: { run?: { id?: string; status?: string } } } = {};
    try {
      event = JSON.parse(body.toString('utf8')) as typeof event;
    } catch {
      // recorded with empty fields; the checks count it as malformed
    }
    const first = !this.seenDeliveries.has(deliveryId);
    this.seenDeliveries.add(deliveryId);
    const fail = first && failFirstOneIn > 0 && createHash('sha256').update(deliveryId).digest()[0]! % failFirstOneIn === 0;
    const status = fail ? 500 : 204;
    this.requests.push({
      endpoint,
      eventId: event.id ?? '',
      type: event.type ?? '',
      runId: event.data?.run?.id ?? null,
      runStatus: event.data?.run?.status ?? null,
      deliveryId,
      signatureOk,
      status,
    });
    return status;
  }

  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await closed;
  }
}
