/**
 * A benchmark target, run as a child process of bench/http.ts (never on its own), so its memory
 * can be read alone and autocannon does not share its event loop.
 *
 *   api   the real service: startService() exactly as `toolrun serve` runs it, configured from the
 *         environment the parent passes (DATABASE_URL, PORT=0, LOG_LEVEL=warn, ...); with
 *         BENCH_API_WORKERS=0 as `toolrun serve --no-workers`.
 *   bare  a plain Fastify instance (defaults: no logger) with one route answering the JSON body
 *         given in BENCH_BODY, serialized through the same response schema as /v1/me.
 *
 * It reports {type:'ready', url} over IPC, answers {type:'rss'} with its RSS, and exits when told
 * to stop or when the parent goes away.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { loadConfig } from '../src/config/config.js';
import { createLogger } from '../src/logger.js';
import { MeSchema } from '../src/me/routes.js';
import { startService } from '../src/service/serve.js';

export type ChildMessage =
  | { type: 'ready'; url: string }
  | { type: 'rss'; rss: number; heapUsed: number }
  | { type: 'error'; message: string };
export type ParentMessage = { type: 'rss' } | { type: 'stop' };

function send(message: ChildMessage): void {
  process.send?.(message);
}

async function startBare(): Promise<{ url: string; stop: () => Promise<void> }> {
  const raw = process.env.BENCH_BODY;
  if (!raw) throw new Error('BENCH_BODY is not set');
  const body: unknown = JSON.parse(raw);
  const app: FastifyInstance = Fastify();
  app.get('/v1/me', { schema: { response: { 200: MeSchema } } }, async () => body);
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  return { url, stop: () => app.close() };
}

async function startApi(): Promise<{ url: string; stop: () => Promise<void> }> {
  const config = loadConfig(process.env);
  // BENCH_API_WORKERS=0: the API alone (`serve --no-workers`), so that nothing but requests runs in it.
  const service = await startService(config, createLogger(config.logLevel), process.stdout, { workers: process.env.BENCH_API_WORKERS !== '0' });
  return { url: service.url, stop: () => service.stop() };
}

async function main(): Promise<void> {
  if (!process.send) throw new Error('bench/server.ts is started by bench/http.ts over IPC');
  const mode = process.argv[2];
  if (mode !== 'api' && mode !== 'bare') throw new Error(`mode must be "api" or "bare", got "${mode ?? ''}"`);
  const server = mode === 'api' ? await startApi() : await startBare();

  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    server.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('message', (message: ParentMessage) => {
    if (message.type === 'rss') {
      const mem = process.memoryUsage();
      send({ type: 'rss', rss: mem.rss, heapUsed: mem.heapUsed });
    } else if (message.type === 'stop') {
      stop();
    }
  });
  process.on('disconnect', stop);
  process.on('SIGTERM', stop);
  send({ type: 'ready', url: server.url });
}

main().catch((err: unknown) => {
  send({ type: 'error', message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  process.exit(1);
});
