import type { FastifyInstance } from 'fastify';
import { ApiError, envelope } from '../core/errors.js';

/**
 * Graceful close, in the error envelope. Once app.close() begins, a request that still arrives on
 * a connection the server holds (it was being sent as closing began) gets 503 service_unavailable
 * with Retry-After, and every response, those in flight included, carries `Connection: close`, so
 * no connection outlives its last request (an idle keep-alive one would hold the close up).
 * Fastify's own return503OnClosing answers in another shape, so it is off where the app is built.
 */
export function refuseWhileClosing(app: FastifyInstance): void {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  // Plain callbacks, not async: they run on every request (see applyRequestLimits).
  app.addHook('onRequest', (request, reply, done) => {
    if (!closing) return done();
    const err = new ApiError('service_unavailable', 'This server is shutting down; retry, and another will answer.');
    // Answered here: the request goes no further (done is not called).
    reply
      .status(err.status)
      .header('X-Request-Id', request.id)
      .header('Retry-After', '1')
      .header('Connection', 'close')
      .send(envelope(err, request.id));
  });
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('Connection', 'close');
    done(null, payload);
  });
}
