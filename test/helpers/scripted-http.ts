// A tiny real HTTP server on 127.0.0.1 that answers each request from a script, for the SDK's
// retry, backoff and pass-through tests: the conditions the real service produces only rarely
// (a 500, a dropped connection, output_not_ready) on demand. It records every request.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Seen {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

/** An answer: a status with JSON (or text) and headers, or 'drop' to cut the connection. */
export type Scripted = { status: number; json?: unknown; text?: string; headers?: Record<string, string> } | 'drop';

export type Handler = (req: Seen, n: number) => Scripted;

export class ScriptedServer {
  readonly seen: Seen[] = [];
  private readonly server: http.Server;
  private readonly routes: { method: string; path: string | RegExp; handler: Handler; count: number }[] = [];
  url = '';

  private constructor() {
    this.server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const seen: Seen = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body, at: Date.now() };
        this.seen.push(seen);
        const route = this.routes.find((r) => r.method === seen.method && (typeof r.path === 'string' ? r.path === seen.path : r.path.test(seen.path)));
        const answer: Scripted = route ? route.handler(seen, ++route.count) : { status: 404, json: { error: { code: 'not_found', message: 'no script' } } };
        if (answer === 'drop') {
          req.socket.destroy();
          return;
        }
        const headers: Record<string, string> = { 'x-request-id': `req-${this.seen.length}`, ...answer.headers };
        if (answer.json !== undefined) headers['content-type'] = 'application/json';
        res.writeHead(answer.status, headers);
        res.end(answer.json !== undefined ? JSON.stringify(answer.json) : (answer.text ?? ''));
      });
    });
  }

  static async start(): Promise<ScriptedServer> {
    const s = new ScriptedServer();
    await new Promise<void>((resolve) => s.server.listen(0, '127.0.0.1', resolve));
    s.url = `http://127.0.0.1:${(s.server.address() as AddressInfo).port}`;
    return s;
  }

  /** Answers method + path with handler(request, nth call of this route, from 1). */
  on(method: string, path: string | RegExp, handler: Handler): this {
    this.routes.push({ method, path, handler, count: 0 });
    return this;
  }

  requests(method: string, path: string): Seen[] {
    return this.seen.filter((s) => s.method === method && s.path === path);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

export const errorBody = (code: string, message = code, extra: Record<string, unknown> = {}) => ({
  error: { code, message, request_id: 'req-x', errors: null, details: null, ...extra },
});
