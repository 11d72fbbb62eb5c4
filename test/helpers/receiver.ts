// A real HTTPS webhook receiver on 127.0.0.1 for tests. It serves the per-run test certificate
// (TEST_TLS_CERT_FILE / TEST_TLS_KEY_FILE, trusted by the service through NODE_EXTRA_CA_CERTS),
// records every request's raw body bytes and headers, and answers each call as programmed:
// a status (optionally after a delay, optionally with a Location), never (hang), or by closing
// the connection unanswered (close). down() closes the port so connections are refused; up()
// listens on the same port again. TLS connections are counted and numbered, and each request
// says which one it came on, so tests can see connections kept alive and reused.
import fs from 'node:fs';
import https from 'node:https';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { waitFor } from './worker.js';

/** An answer: a status (after delayMs, with a Location or body if given). */
export interface Reply {
  status: number;
  delayMs?: number;
  location?: string;
  body?: string;
}
export type Answer = Reply | 'hang' | 'close';

export interface Received {
  /** 1-based call number on this receiver. */
  seq: number;
  /** Date.now() when the whole body had arrived. */
  at: number;
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** True once an answer was sent; a hung request stays false. */
  answered: boolean;
  /** The TLS connection it came on: 1 for this receiver's first, and so on. */
  connection: number;
}

export const ok: Reply = { status: 204 };
export const fail500: Reply = { status: 500, body: 'boom' };
export const redirectTo = (location: string): Reply => ({ status: 302, location });

function tlsFiles(): { cert: Buffer; key: Buffer } {
  const cert = process.env.TEST_TLS_CERT_FILE;
  const key = process.env.TEST_TLS_KEY_FILE;
  if (!cert || !key) throw new Error('TEST_TLS_CERT_FILE / TEST_TLS_KEY_FILE are not set: run the tests through `npm test`');
  return { cert: fs.readFileSync(cert), key: fs.readFileSync(key) };
}

const live = new Set<Receiver>();

export class Receiver {
  readonly requests: Received[] = [];
  private readonly queue: Answer[] = [];
  private fallback: Answer = ok;
  private readonly server: https.Server;
  /** Responses not finished yet, with the request they answer. */
  private readonly held = new Map<ServerResponse, Received>();
  private port = 0;
  private listening = false;
  private readonly connectionIds = new WeakMap<Socket, number>();
  private readonly openSockets = new Set<Socket>();
  /** TLS connections accepted so far. */
  connections = 0;

  private constructor() {
    this.server = https.createServer(tlsFiles(), (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const rec: Received = {
          seq: this.requests.length + 1,
          at: Date.now(),
          method: req.method ?? '',
          path: req.url ?? '',
          headers: req.headers,
          body: Buffer.concat(chunks),
          answered: false,
          connection: this.connectionIds.get(req.socket) ?? 0,
        };
        this.requests.push(rec);
        this.answer(this.queue.shift() ?? this.fallback, rec, res);
      });
    });
    this.server.on('secureConnection', (socket: Socket) => {
      this.connectionIds.set(socket, ++this.connections);
      this.openSockets.add(socket);
      socket.on('close', () => this.openSockets.delete(socket));
    });
  }

  private answer(a: Answer, rec: Received, res: ServerResponse): void {
    this.held.set(res, rec);
    res.on('close', () => this.held.delete(res));
    if (a === 'hang') return;
    if (a === 'close') {
      res.socket?.destroy();
      return;
    }
    this.reply(a, rec, res);
  }

  private reply(a: Reply, rec: Received, res: ServerResponse): void {
    const send = () => {
      if (res.destroyed) return;
      res.writeHead(a.status, a.location ? { location: a.location } : {});
      res.end(a.body ?? '');
      rec.answered = true;
    };
    if (a.delayMs) setTimeout(send, a.delayMs);
    else send();
  }

  /** Starts a receiver on a free port of 127.0.0.1 (closed by closeReceivers()). */
  static async start(): Promise<Receiver> {
    const r = new Receiver();
    await r.up();
    live.add(r);
    return r;
  }

  /** The URL for this receiver (the path is only recorded). */
  url(path = '/hook'): string {
    return `https://127.0.0.1:${this.port}${path}`;
  }

  get portNumber(): number {
    return this.port;
  }

  /** Answers for the next calls, in order; afterwards the fallback answer. */
  program(...answers: Answer[]): this {
    this.queue.push(...answers);
    return this;
  }

  /** The answer once the programmed ones are used up (204 unless set). */
  otherwise(a: Answer): this {
    this.fallback = a;
    return this;
  }

  /** TLS connections open now (kept alive by the sender, or busy). */
  get openConnections(): number {
    return this.openSockets.size;
  }

  /** How long the server keeps an idle connection open (Node's default: 5 s). */
  keepAliveFor(ms: number): this {
    this.server.keepAliveTimeout = ms;
    return this;
  }

  /** Answers every request hanging now, as given. */
  release(a: Reply = ok): void {
    for (const [res, rec] of this.held) if (!rec.answered) this.reply(a, rec, res);
  }

  /** Listens (again) on the same port; the first call picks a free one. */
  async up(): Promise<void> {
    if (this.listening) return;
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.port, '127.0.0.1', () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    this.port = (this.server.address() as AddressInfo).port;
    this.listening = true;
  }

  /** Closes the port (connections are refused) and cuts every open connection. */
  async down(): Promise<void> {
    if (!this.listening) return;
    this.listening = false;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const res of this.held.keys()) res.destroy();
    this.server.closeAllConnections();
    await closed;
  }

  /** Waits until at least n requests have arrived; returns the first n. */
  async waitForRequests(n: number, timeoutMs = 20_000): Promise<Received[]> {
    return waitFor(`${n} request(s) at ${this.url()}`, async () => (this.requests.length >= n ? this.requests.slice(0, n) : undefined), timeoutMs);
  }

  /** Requests received and not answered, whose connection the sender still holds open. */
  get open(): Received[] {
    return [...this.held.values()].filter((r) => !r.answered);
  }
}

/** Closes every receiver started by this test file; for after hooks. */
export async function closeReceivers(): Promise<void> {
  const all = [...live];
  live.clear();
  await Promise.all(all.map((r) => r.down()));
}
