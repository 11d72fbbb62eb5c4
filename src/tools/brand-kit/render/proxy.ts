import { randomBytes, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import { Transform, type Duplex, type TransformCallback } from 'node:stream';
import type { Logger } from 'pino';
import { logRefusal, OutboundError, outboundRequest, parseOutboundUrl, vetHost } from '../../../net/outbound.js';
import type { ResolverFactory } from '../../../net/resolve.js';

/** The outbound rules and bounds one render's proxy applies to every request of the browser. */
export interface ProxyRules {
  allowPrivate: boolean;
  /** Tests only (see outboundRequest): which addresses count as allowed. */
  allowAddress?: ((ip: string) => boolean) | undefined;
  /** Bytes the browser may receive and send in all: request and response bodies and tunnels, both ways, together. */
  maxBytes: number;
  /** Requests and tunnels the browser may open in all. */
  maxRequests: number;
  /** One plain-HTTP response (decoded). */
  maxResponseBytes: number;
  /** One plain-HTTP request, or the quiet time after which a tunnel is closed. */
  requestTimeoutMs: number;
  logger: Pick<Logger, 'warn'>;
  /** Tests only: the DNS resolver (default: the system's servers, as every outbound request). */
  resolver?: ResolverFactory | undefined;
}

export interface ProxyStats {
  requests: number;
  bytes: number;
  /** Requests refused: not public, over a bound, or a method or scheme the proxy does not carry. */
  refused: number;
}

const MAX_REQUEST_BODY = 64 * 1024;
/** Hop-by-hop headers (RFC 9110 7.6.1), the proxy's own, and those the outbound client sets itself. */
const DROPPED_REQUEST = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host', 'content-length', 'accept-encoding']);
const DROPPED_RESPONSE = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'content-length', 'content-encoding']);

const statusFor = (err: unknown): number => (err instanceof OutboundError ? (err.code === 'url_not_public' || err.code === 'bad_url' ? 403 : err.code === 'timeout' ? 504 : 502) : 502);

/**
 * A forward HTTP proxy on loopback for one render, the only way out of the browser (it is started
 * with this proxy for every scheme and host, loopback included, and resolves no names itself).
 * Plain http requests are made with the service's outbound client (vetted, pinned addresses,
 * bounded in bytes and time, redirects handed back to the browser, which asks again through
 * here); CONNECT tunnels (https, wss) go to the address vetted for their host, and are counted
 * and bounded the same way. Anything else (an Upgrade on a plain request, a relative URL) is refused.
 *
 * Only the page's requests are carried: the proxy asks for credentials of its own (random, per
 * render), which Playwright answers for the page's requests only. Chromium's own background
 * requests (component updates, its clock, sign-in; flags do not silence them all in Debian's build)
 * get 407 before any name is looked up, so a render neither spends its budget on them nor sends
 * them to Google from the operator's network.
 */
export class RenderProxy {
  readonly stats: ProxyStats = { requests: 0, bytes: 0, refused: 0 };
  private readonly server: http.Server;
  private readonly sockets = new Set<Duplex>();
  private readonly stop = new AbortController();
  /** What the browser logs in to the proxy with (Playwright's proxy username and password). */
  readonly credentials = { username: 'render', password: randomBytes(24).toString('base64url') };
  private readonly expected = Buffer.from(`Basic ${Buffer.from(`${this.credentials.username}:${this.credentials.password}`).toString('base64')}`);

  constructor(private readonly rules: ProxyRules) {
    this.server = http.createServer((req, res) => void this.forward(req, res));
    this.server.on('connect', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => void this.tunnel(req, socket, head));
    this.server.on('upgrade', (_req: http.IncomingMessage, socket: Duplex) => {
      this.stats.refused++;
      socket.destroy();
    });
    this.server.on('connection', (s: net.Socket) => this.track(s));
    this.server.on('clientError', (_err, socket: Duplex) => socket.destroy());
  }

  /** Listens on a free port of 127.0.0.1; returns the proxy's URL. */
  async start(): Promise<string> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, '127.0.0.1', () => resolve());
    });
    const { port } = this.server.address() as net.AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  /** Stops every request and tunnel at once and closes the listener. */
  async close(): Promise<void> {
    this.stop.abort();
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private track(s: Duplex): void {
    this.sockets.add(s);
    s.once('close', () => this.sockets.delete(s));
  }

  /** Takes one request from the budget, or says why not. */
  private admit(): string | null {
    if (this.stop.signal.aborted) return 'the render is over';
    if (this.stats.requests >= this.rules.maxRequests) return `more than ${this.rules.maxRequests} requests`;
    if (this.stats.bytes >= this.rules.maxBytes) return `more than ${this.rules.maxBytes} bytes`;
    this.stats.requests++;
    return null;
  }

  /**
   * Takes `n` bytes from the budget every request and tunnel shares, in either direction, as they
   * pass: false (nothing taken) when they would overspend it. Counted per chunk, not per
   * finished answer, so requests under way at once cannot each spend the whole remainder; and
   * since a plain answer is held until it is complete, all of them together hold at most the budget.
   */
  private spend(n: number): boolean {
    if (this.stats.bytes + n > this.rules.maxBytes) return false;
    this.stats.bytes += n;
    return true;
  }

  /** Whether a request carries this render's credentials (compared in constant time). */
  private authorised(req: http.IncomingMessage): boolean {
    const given = Buffer.from(req.headers['proxy-authorization'] ?? '');
    return given.length === this.expected.length && timingSafeEqual(given, this.expected);
  }

  private refuse(res: http.ServerResponse, status: number, why: string): void {
    this.stats.refused++;
    if (!res.headersSent) res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' });
    res.end(`refused by the render proxy: ${why}\n`);
  }

  private async readBody(req: http.IncomingMessage): Promise<Buffer | null> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of req as AsyncIterable<Buffer>) {
      size += c.length;
      if (size > MAX_REQUEST_BODY) return null;
      chunks.push(c);
    }
    return Buffer.concat(chunks);
  }

  private async forward(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (!this.authorised(req)) {
      this.stats.refused++;
      res.writeHead(407, { 'proxy-authenticate': 'Basic realm="toolrun-render"', 'content-length': '0', connection: 'close' });
      res.end();
      return;
    }
    const method = req.method ?? 'GET';
    if (method !== 'GET' && method !== 'HEAD' && method !== 'POST') return this.refuse(res, 405, `method ${method}`);
    let url: URL;
    try {
      url = parseOutboundUrl(req.url ?? '', false);
    } catch {
      return this.refuse(res, 400, 'not an absolute http URL');
    }
    const over = this.admit();
    if (over) return this.refuse(res, 503, over);
    const body = method === 'POST' ? await this.readBody(req).catch(() => null) : undefined;
    if (body === null) return this.refuse(res, 413, `a request body over ${MAX_REQUEST_BODY} bytes`);
    if (body && !this.spend(body.length)) return this.refuse(res, 503, `more than ${this.rules.maxBytes} bytes`);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value === undefined || DROPPED_REQUEST.has(name)) continue;
      headers[name] = Array.isArray(value) ? value.join(', ') : value;
    }
    try {
      const answer = await outboundRequest(url.toString(), {
        allowPrivate: this.rules.allowPrivate,
        ...(this.rules.allowAddress ? { allowAddress: this.rules.allowAddress } : {}),
        ...(this.rules.resolver ? { resolver: this.rules.resolver } : {}),
        timeoutMs: this.rules.requestTimeoutMs,
        maxBytes: this.rules.maxResponseBytes,
        onChunk: (n) => {
          if (!this.spend(n)) throw new OutboundError('too_large', `the render's ${this.rules.maxBytes}-byte budget is spent`);
        },
        // The browser follows redirects itself, each one back through here and vetted again.
        maxRedirects: 0,
        method,
        headers,
        ...(body ? { body } : {}),
        signal: this.stop.signal,
      });
      const out: http.OutgoingHttpHeaders = {};
      for (const [name, value] of Object.entries(answer.headers)) if (value !== undefined && !DROPPED_RESPONSE.has(name)) out[name] = value;
      out['content-length'] = String(answer.body.length);
      res.writeHead(answer.status, out);
      res.end(method === 'HEAD' ? undefined : answer.body);
    } catch (err) {
      logRefusal(this.rules.logger, err, { url_host: url.hostname, via: 'render_proxy' });
      this.refuse(res, statusFor(err), err instanceof Error ? err.message : 'failed');
    }
  }

  private async tunnel(req: http.IncomingMessage, client: Duplex, head: Buffer): Promise<void> {
    this.track(client);
    client.on('error', () => client.destroy());
    const fail = (status: number, why: string) => {
      this.stats.refused++;
      client.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? 'Refused'}\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\nrefused by the render proxy: ${why}\n`);
    };
    if (!this.authorised(req)) {
      this.stats.refused++;
      client.end('HTTP/1.1 407 Proxy Authentication Required\r\nproxy-authenticate: Basic realm="toolrun-render"\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
      return;
    }
    let target: URL;
    try {
      target = new URL(`http://${req.url ?? ''}`);
    } catch {
      return fail(400, 'not host:port');
    }
    const port = Number(target.port);
    if (!target.hostname || !port || target.pathname !== '/' || target.username || target.password) return fail(400, 'not host:port');
    const over = this.admit();
    if (over) return fail(503, over);
    const deadline = AbortSignal.any([this.stop.signal, AbortSignal.timeout(this.rules.requestTimeoutMs)]);
    let address;
    try {
      address = await vetHost(target.hostname, {
        allowPrivate: this.rules.allowPrivate,
        allowAddress: this.rules.allowAddress,
        resolver: this.rules.resolver,
        signal: deadline,
        timeoutMs: this.rules.requestTimeoutMs,
      });
    } catch (err) {
      logRefusal(this.rules.logger, err, { url_host: target.hostname, via: 'render_proxy' });
      return fail(statusFor(err), err instanceof Error ? err.message : 'failed');
    }
    if (this.stop.signal.aborted || client.destroyed) return void client.destroy();
    // The vetted address, never a second lookup: TLS inside still checks the host name.
    const upstream = net.connect({ host: address.address, port, family: address.family });
    this.track(upstream);
    upstream.setTimeout(this.rules.requestTimeoutMs, () => upstream.destroy());
    client.on('error', () => upstream.destroy());
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
    let connected = false;
    // Every socket and stream here has its error handler for its whole life: an unhandled
    // 'error' (a reset mid-tunnel) would take the whole process down.
    upstream.on('error', () => {
      if (!connected && !client.destroyed) fail(502, 'connection failed');
      upstream.destroy();
    });
    upstream.once('connect', () => {
      connected = true;
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      const cut = () => {
        upstream.destroy();
        client.destroy();
      };
      if (head.length && !this.spend(head.length)) return cut();
      if (head.length) upstream.write(head);
      // Both directions spend the one budget: a page may not send out what it may not fetch.
      const incoming = new ByteBudget((n) => this.spend(n));
      const outgoing = new ByteBudget((n) => this.spend(n));
      incoming.on('error', cut);
      outgoing.on('error', cut);
      upstream.pipe(incoming).pipe(client);
      client.pipe(outgoing).pipe(upstream);
    });
  }
}

/** Counts what passes one way through a tunnel against the render's byte budget; past it, the tunnel is cut. */
class ByteBudget extends Transform {
  constructor(private readonly spend: (n: number) => boolean) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    if (!this.spend(chunk.length)) return done(new Error('the render byte budget is spent'));
    done(null, chunk);
  }
}
