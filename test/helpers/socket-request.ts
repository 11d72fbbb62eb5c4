import http from 'node:http';
import type { AnsweredRequest } from './error-envelope.js';

/**
 * One request on a new connection, optionally from a given local address (any 127.x.y.z is this
 * machine), so the server sees it come from another client. Times out rather than hang.
 */
export function socketRequest(
  baseUrl: string,
  path: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string; localAddress?: string; timeoutMs?: number } = {},
): Promise<AnsweredRequest> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        method: opts.method ?? 'GET',
        path,
        headers: opts.headers ?? {},
        agent: false,
        timeout: opts.timeoutMs ?? 30_000,
        ...(opts.localAddress ? { localAddress: opts.localAddress } : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          resolve({ statusCode: res.statusCode ?? 0, headers: res.headers, body, json: <T>() => JSON.parse(body) as T });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${opts.timeoutMs ?? 30_000} ms to ${opts.method ?? 'GET'} ${path}`)));
    req.on('error', reject);
    req.end(opts.body);
  });
}
