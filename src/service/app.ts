import { randomUUID } from 'node:crypto';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyPluginAsync,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Logger } from 'pino';
import { AUTH_CHANNEL, KeyCache } from '../auth/key-cache.js';
import { Balances, SPARKS_CHANNEL } from '../sparks/balances.js';
import { KeyUsage } from '../auth/key-usage.js';
import { createAuthHook } from '../auth/plugin.js';
import { consolePages, storageOrigin } from '../console/pages.js';
import { consoleApi } from '../console/plugin.js';
import type { SignInDelays } from '../console/throttle.js';
import type { Config } from '../config/config.js';
import { isDbUnavailable } from '../db/errors.js';
import type { Db } from '../db/pool.js';
import { fileRoutes, fileSchemas } from '../files/routes.js';
import type { MediaBinaries } from '../media/binaries.js';
import { meRoutes, MeSchema } from '../me/routes.js';
import { runRoutes, runSchemas } from '../runs/routes.js';
import { runEventRoutes } from '../runs/events-stream.js';
import { RUN_CHANGES_CHANNEL, StreamHub, TEAM_EVENTS_CHANNEL } from '../events/hub.js';
import { teamEventRoutes } from '../events/routes.js';
import { EVENTS_CHANNEL } from '../runs/transitions.js';
import { RunWaiters } from '../runs/waiters.js';
import { webhookRoutes, webhookSchemas } from '../webhooks/routes.js';
import { LocalStorage } from '../storage/local.js';
import { localStorageRoutes } from '../storage/local-routes.js';
import type { Storage } from '../storage/storage.js';
import type { ToolRegistry } from '../tools/registry.js';
import { toolRoutes, toolSchemas } from '../tools/routes.js';
import { ApiError, envelope, invalidRequest } from '../core/errors.js';
import { docsRoutes } from '../http/docs.js';
import { createMethodIndex } from '../http/not-found.js';
import { applyRequestLimits, connectionOptions, jsonDepthError } from '../http/limits.js';
import { refuseWhileClosing } from '../http/closing.js';
import type { Metrics } from '../metrics/metrics.js';
import { instrumentHttp, metricsRoutes } from '../metrics/routes.js';
import { buildOpenApiDocument, openApiTransform } from '../http/openapi.js';
import { ErrorResponseSchema } from '../core/schemas.js';
import { sharedSerializers } from '../http/serializers.js';
import { fieldErrors } from '../core/validation.js';
import { lazyRequestLoggers } from '../http/request-logger.js';
import { registerStringChecks, type StringChecks } from '../http/strings.js';
import { systemRoutes } from '../http/system-routes.js';
import { addRouteHooks } from './route-hooks.js';

export interface AppDeps {
  config: Config;
  db: Db;
  logger: Logger;
  tools: ToolRegistry;
  storage: Storage;
  media: MediaBinaries;
  /** This process's metrics: GET /metrics and per-route request figures; absent, neither exists. */
  metrics?: Metrics;
  /** Test-only: routes registered after the built-in ones, under the same hooks and error handling. */
  extraRoutes?: FastifyPluginAsync;
  /** Test-only: shorter sign-in delays, so a test fills an account's queue in seconds. */
  signInDelays?: SignInDelays;
}

/** Maps whatever was thrown to the error the client sees. */
function toApiError(err: FastifyError, request: FastifyRequest, strings: StringChecks): ApiError {
  if (err instanceof ApiError) return err;
  if (err.validation) return invalidRequest(strings.withSchemaErrors(request, fieldErrors(err.validation, err.validationContext ?? 'body')));
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError('unsupported_media_type', 'Send the body as JSON with "Content-Type: application/json".');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('payload_too_large', 'The request body is larger than this endpoint accepts.');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return invalidRequest([{ loc: ['body'], message: 'is empty; send a JSON object', code: 'malformed_json' }]);
    case 'FST_ERR_BAD_URL':
      return invalidRequest([{ loc: ['path'], message: 'is not a valid URL path', code: 'malformed_path' }]);
  }
  if (err instanceof SyntaxError || err.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
    return invalidRequest([{ loc: ['body'], message: 'is not valid JSON', code: 'malformed_json' }]);
  }
  if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
    return invalidRequest([{ loc: ['request'], message: err.message, code: 'invalid' }]);
  }
  if (isDbUnavailable(err)) {
    return new ApiError('service_unavailable', 'The service is briefly unavailable; retry with backoff.', {
      headers: { 'Retry-After': '1' },
    });
  }
  return new ApiError('internal_error', 'Something failed on our side. Retry with backoff; if it persists, quote the request id.');
}

/** One info line per request (on completion); the arrival line is debug-only. */
class QuietStartLogController extends LogController {
  /** root: the app's logger, whose level is every request's (no route sets its own). */
  constructor(
    options: ConstructorParameters<typeof LogController>[0],
    private readonly root: Logger,
  ) {
    super(options);
  }

  // Each line's fields are built only when the line is written: at LOG_LEVEL=warn neither is.
  override incomingRequest(request: FastifyRequest): void {
    if (this.root.isLevelEnabled('debug')) request.log.debug({ req: request }, 'incoming request');
  }

  // The completion line also names the request (method and path: the logger's serializer drops
  // the query, where signed URLs carry their signature), so each line says what was asked.
  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (this.isLogDisabled(request) || !this.root.isLevelEnabled(error ? 'error' : 'info')) return;
    if (error) reply.log.error({ req: request, res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored');
    else reply.log.info({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }
}

/**
 * The caches of API keys' contexts and of teams' balances, kept true by the process's LISTEN
 * connection: every notification names a team whose keys (toolrun_auth: keys and balance) or
 * balance (toolrun_sparks) are read again; while the connection is down the caches are off (and
 * emptied), so nothing is answered from memory on a change nobody heard of.
 */
async function listenForKeyChanges(app: FastifyInstance, config: Config, db: Db, waiters: RunWaiters, hub: StreamHub): Promise<{ keyCache: KeyCache; balances: Balances }> {
  const cache = new KeyCache(config.keyCacheMaxAgeMs);
  const balances = new Balances(config.keyCacheMaxAgeMs);
  // The same connection hears runs becoming final, for requests that wait for them (Prefer: wait),
  // and runs and teams changing, for the event streams.
  const listener = db.notifications.subscribe({
    channels: [AUTH_CHANNEL, SPARKS_CHANNEL, EVENTS_CHANNEL, RUN_CHANGES_CHANNEL, TEAM_EVENTS_CHANNEL],
    onNotification: (channel, payload) => {
      if (channel === EVENTS_CHANNEL) {
        if (payload) {
          waiters.notify(payload);
          hub.runChanged(payload);
        }
        return;
      }
      if (channel === RUN_CHANGES_CHANNEL) {
        if (payload) hub.runChanged(payload);
        return;
      }
      if (channel === TEAM_EVENTS_CHANNEL) {
        if (payload) hub.teamEvent(payload);
        return;
      }
      if (channel === SPARKS_CHANNEL) {
        if (payload) balances.changed(payload);
        else balances.clear();
        return;
      }
      if (payload) {
        cache.invalidateTeam(payload);
        balances.changed(payload);
      } else {
        cache.clear();
        balances.clear();
      }
      hub.accessChanged(payload || null);
    },
    onConnected: () => {
      cache.setListening(true);
      balances.setListening(true);
      waiters.notifyAll();
      hub.wakeAll();
    },
    onDisconnected: () => {
      cache.setListening(false);
      balances.setListening(false);
    },
  });
  await listener.startOrRetry();
  app.addHook('onClose', async () => listener.stop());
  return { keyCache: cache, balances };
}

/** The app's logger with the serializer Fastify adds to it for `res` (a reply: its status only). */
function withReplySerializer(logger: Logger): Logger {
  return logger.child({}, { serializers: { res: (reply: { statusCode?: number }) => ({ statusCode: reply.statusCode }) } });
}

/** Believes the `hops` proxies nearest the service (what Fastify does with a number, which its types leave out). */
function trustHops(hops: number): (address: string, hop: number) => boolean {
  return (_address, hop) => hop < hops;
}

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  // Fastify's own logger type is narrower than pino's; the instance is the same.
  const { config, db, logger, tools } = deps;
  // Given a logger, Fastify listens for the end of every response to write its completion line,
  // which is info. Below info that line is never written, so Fastify gets no logger and no
  // listeners (5,000 of the 80,000 instructions of a request, issue 29); request.log is ours
  // either way, a lazy request logger under the app's, with Fastify's one extra serializer.
  const completionLines = logger.isLevelEnabled('info');
  const app = Fastify({
    ...(completionLines ? { loggerInstance: logger as FastifyBaseLogger } : {}),
    genReqId: () => randomUUID(),
    childLoggerFactory: lazyRequestLoggers(completionLines ? undefined : withReplySerializer(logger)),
    logController: new QuietStartLogController({ requestIdLogLabel: 'request_id' }, logger),
    bodyLimit: config.bodyLimitBytes,
    // request.ip is the client's address, which shares out lookups of unseen keys (src/auth).
    trustProxy: typeof config.trustProxy === 'number' ? trustHops(config.trustProxy) : config.trustProxy,
    ...connectionOptions(config.httpTimeouts),
    // Requests arriving while closing get 503 in the envelope (refuseWhileClosing), not Fastify's shape.
    return503OnClosing: false,
    ajv: { customOptions: { allErrors: true, removeAdditional: false, coerceTypes: false, useDefaults: true } },
    schemaController: { compilersFactory: sharedSerializers() },
    // URLs the router cannot take apart never reach the error handler; answer them in the envelope too.
    frameworkErrors: (err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
      const apiError = invalidRequest([
        {
          loc: ['path'],
          message: err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'has a segment that is too long' : 'is not a valid URL path',
          code: 'malformed_path',
        },
      ]);
      reply.header('X-Request-Id', request.id);
      reply.status(apiError.status).send(envelope(apiError, request.id));
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  applyRequestLimits(app, config.httpTimeouts);
  // Bodies are JSON only: without this, Fastify's built-in text/plain parser accepts plain text.
  app.removeContentTypeParser('text/plain');
  // An empty JSON body counts as no body, so bodiless POSTs (cancel, test) work from clients that
  // always send Content-Type: application/json; routes that need a body still say so (422).
  const defaultJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') return done(null, undefined);
    const tooDeep = jsonDepthError(text);
    if (tooDeep) return done(tooDeep, undefined);
    return defaultJson(request, text, done);
  });

  app.decorateRequest('auth', null);
  const methods = createMethodIndex(app);

  app.addSchema(ErrorResponseSchema);
  app.addSchema(MeSchema);
  toolSchemas(app);
  fileSchemas(app);
  runSchemas(app);
  webhookSchemas(app);

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Tool-Run API',
        version: '1',
        description: 'Upload media, price a job, start it, follow it and download the results.',
      },
      servers: [{ url: config.publicBaseUrl }],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', description: 'A team API key: svc_live_... or svc_test_...' },
        },
      },
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
    transform: ({ schema, url, route }) => {
      const out = openApiTransform({ schema, url, route });
      return { schema: out.schema as typeof schema, url: out.url };
    },
  });

  app.addHook('onRequest', (request, reply, done) => {
    reply.header('X-Request-Id', request.id);
    done();
  });
  refuseWhileClosing(app);
  if (deps.metrics) instrumentHttp(app, deps.metrics);
  const usage = new KeyUsage(db.relaxed, (err) => logger.warn({ err }, 'could not record when API keys were last used'));
  // Closing writes what is noted, so a graceful stop loses no "last used".
  app.addHook('onClose', async () => usage.flush());
  const waiters = new RunWaiters(config.waiters);
  const hub = new StreamHub(config.streams);
  // Open event streams end as closing begins, or they would hold the close up to its grace period.
  app.addHook('preClose', async () => hub.shutdown());
  const { keyCache, balances } = await listenForKeyChanges(app, config, db, waiters, hub);
  const authFor = createAuthHook(config, db, usage, keyCache);
  const strings = registerStringChecks();
  // Before any route is added: each gets its key and character checks as it comes.
  app.addHook('onRoute', (route) => addRouteHooks(route, authFor, strings));
  const teamChanged = (teamId: string) => keyCache.invalidateTeam(teamId);

  app.setErrorHandler((err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    // A body error on a route that does not exist: the missing route is the answer.
    if (request.is404 && !(err instanceof ApiError)) return notFound(request, reply);
    const apiError = toApiError(err, request, strings);
    if (apiError.code === 'service_unavailable') {
      // The database is down (or the process closing): requests fail alike, one short line each, no stack.
      request.log.warn({ code: apiError.code, reason: err.message, db_error: err.code }, 'service unavailable');
    } else if (apiError.status >= 500) {
      request.log.error({ err }, 'request failed');
    } else if (!(err instanceof ApiError)) {
      request.log.info({ code: apiError.code, reason: err.code ?? err.message }, 'request refused');
    }
    reply.header('X-Request-Id', request.id);
    for (const [name, value] of Object.entries(apiError.opts.headers ?? {})) reply.header(name, value);
    reply.status(apiError.status).send(envelope(apiError, request.id));
  });

  const notFound = (request: FastifyRequest, reply: FastifyReply) => {
    reply.header('X-Request-Id', request.id);
    const allowed = methods.allowedMethods(request.url);
    if (allowed.length > 0) {
      reply.header('Allow', allowed.join(', '));
      const err = new ApiError('method_not_allowed', methods.methodNotAllowedMessage(request.method, request.url, allowed), {
        details: { allowed_methods: allowed },
      });
      return reply.status(err.status).send(envelope(err, request.id));
    }
    const err = new ApiError('not_found', methods.notFoundMessage(request.method, request.url));
    return reply.status(err.status).send(envelope(err, request.id));
  };
  app.setNotFoundHandler(notFound);

  let openApiDoc: Record<string, unknown> | null = null;
  const openapi = () => (openApiDoc ??= buildOpenApiDocument(app));
  await app.register(systemRoutes({ db, openapi }));
  const { notFoundMessage } = methods;
  await app.register(docsRoutes({ openapi, publicBaseUrl: config.publicBaseUrl, notFoundMessage }));
  if (deps.metrics) await app.register(metricsRoutes({ metrics: deps.metrics, token: config.metrics.token, notFoundMessage }));
  await app.register(meRoutes({ db, balances }));
  await app.register(toolRoutes(tools));
  await app.register(fileRoutes({ config, db, storage: deps.storage, media: deps.media }));
  await app.register(runRoutes({ config, db, tools, storage: deps.storage, waiters, balanceChanged: (teamId) => balances.changed(teamId) }));
  await app.register(runEventRoutes({ config, db, tools, storage: deps.storage, hub }));
  await app.register(webhookRoutes({ config, db }));
  await app.register(teamEventRoutes({ db, hub }));
  await app.register(
    consoleApi({ config, db, tools, storage: deps.storage, media: deps.media, teamChanged, ...(deps.signInDelays ? { signInDelays: deps.signInDelays } : {}) }),
  );
  await app.register(consolePages({ notFoundMessage, storageOrigin: storageOrigin(config.storage) }));
  // The local backend serves its signed part and download URLs itself; S3 serves its own.
  if (deps.storage instanceof LocalStorage) await app.register(localStorageRoutes(deps.storage, config.httpTimeouts));
  if (deps.extraRoutes) await app.register(deps.extraRoutes);

  await app.ready();
  return app;
}
