import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { ErrorBody } from '../core/errors.js';
import type { Metrics } from './metrics.js';
import { METRICS_PATH, metricsRoutes } from './routes.js';

export interface MetricsServer {
  url: string;
  close(): Promise<void>;
}

/**
 * The metrics listener of a `toolrun worker` (which has no API): GET /metrics on its own port,
 * with the same token rule as the API's; anything else is 404 in the error envelope.
 */
export async function startMetricsServer(opts: {
  host: string;
  port: number;
  token: string | null;
  metrics: Metrics;
  logger: Logger;
}): Promise<MetricsServer> {
  const app: FastifyInstance = Fastify({
    loggerInstance: opts.logger as FastifyBaseLogger,
    genReqId: () => randomUUID(),
    // A scrape every few seconds is not worth a log line each.
    disableRequestLogging: true,
  });
  const envelope = (requestId: string, code: string, message: string): ErrorBody => ({
    error: { code, message, request_id: requestId, errors: null, details: null },
  });
  app.addHook('onRequest', async (request, reply) => {
    reply.header('X-Request-Id', request.id);
  });
  app.setNotFoundHandler((request, reply) =>
    reply.status(404).send(envelope(request.id, 'not_found', `This port serves only GET ${METRICS_PATH}.`)),
  );
  app.setErrorHandler((err, request, reply) => {
    request.log.error({ err }, 'metrics request failed');
    return reply.status(500).send(envelope(request.id, 'internal_error', 'Reading the metrics failed; see the worker log.'));
  });
  await app.register(metricsRoutes({ metrics: opts.metrics, token: opts.token, notFoundMessage: () => `This port serves only GET ${METRICS_PATH}.` }));
  await app.listen({ host: opts.host, port: opts.port });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : opts.port;
  const url = `http://${opts.host.includes(':') ? `[${opts.host}]` : opts.host}:${port}${METRICS_PATH}`;
  opts.logger.info({ url }, 'metrics listening');
  return {
    url,
    async close() {
      // A scrape in progress is short; nothing here is worth waiting for past a second.
      const timer = setTimeout(() => app.server.closeAllConnections(), 1000);
      await app.close();
      clearTimeout(timer);
    },
  };
}
