import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Config } from '../config/config.js';
import type { Db } from '../db/pool.js';
import type { MediaBinaries } from '../media/binaries.js';
import type { Storage } from '../storage/storage.js';
import type { ToolRegistry } from '../tools/registry.js';
import { anyRequestErrorResponses, errorResponses } from '../core/schemas.js';
import { consoleGuard } from './guard.js';
import { buildConsoleDocument, documentedRoute, type DocumentedRoute } from './openapi.js';
import { DummyHash } from './passwords.js';
import { consoleRateLimit } from './rate-limit.js';
import { keyRoutes } from './routes-keys.js';
import { memberRoutes } from './routes-members.js';
import { playgroundRoutes } from './routes-playground.js';
import { runConsoleRoutes } from './routes-runs.js';
import { usageRoutes } from './routes-usage.js';
import { sessionRoutes } from './routes-session.js';
import type { SignInDelays } from './throttle.js';
import { webhookConsoleRoutes } from './routes-webhooks.js';

export interface ConsoleDeps {
  config: Config;
  db: Db;
  /** The same registry, storage and media binaries as /v1: app runs and playground uploads go through the same code. */
  tools: ToolRegistry;
  storage: Storage;
  media: MediaBinaries;
  dummyHash: DummyHash;
  /** The sign-in throttle's delays; absent, its defaults (tests shorten them). */
  signInDelays?: SignInDelays;
  /** Called after a change to a team's keys or members commits: this process stops trusting what it remembers of them. */
  teamChanged(teamId: string): void;
}

/**
 * The console's JSON API under /console/api (its pages and assets are registered elsewhere). An
 * encapsulated plugin: its guard (Origin, session, CSRF) applies to its routes only, after the
 * app's own hooks (request id, string checks, limits) and under the app's error handler.
 */
export function consoleApi(opts: Omit<ConsoleDeps, 'dummyHash'>): FastifyPluginAsyncTypebox {
  return async (app) => {
    const deps: ConsoleDeps = { ...opts, dummyHash: new DummyHash() };
    const routes: DocumentedRoute[] = [];
    app.addHook('onRoute', (route) => {
      // Every route behind a session may answer 429 (the member's bucket): documented as such.
      const schema = route.schema as { response?: Record<number, unknown> } | undefined;
      if (schema?.response && (route.config as { consoleAccess?: string } | undefined)?.consoleAccess !== 'public' && !schema.response[429]) {
        schema.response = { ...schema.response, 429: errorResponses('rate_limited')[429] };
      }
      const documented = documentedRoute(route);
      if (documented) routes.push(documented);
    });
    app.decorateRequest('consoleSession', null);
    app.addHook('onRequest', consoleGuard(opts.config, opts.db));
    app.addHook('onRequest', consoleRateLimit(opts.db));
    // Console answers carry a session's data, keys, signing secrets and invite links: no cache
    // (the browser's, a proxy's) may keep any of them, errors included.
    app.addHook('onSend', (_request, reply, payload, done) => {
      reply.header('Cache-Control', 'no-store');
      done(null, payload);
    });

    await app.register(sessionRoutes(deps));
    await app.register(keyRoutes(deps));
    await app.register(webhookConsoleRoutes(deps));
    await app.register(memberRoutes(deps));
    await app.register(runConsoleRoutes(deps));
    await app.register(playgroundRoutes(deps));
    await app.register(usageRoutes(deps));

    let doc: Record<string, unknown> | null = null;
    app.get(
      '/console/api/openapi.json',
      {
        config: { consoleAccess: 'public' },
        schema: {
          operationId: 'getConsoleOpenApi',
          summary: 'This OpenAPI 3.1 document of the console API',
          tags: ['system'],
          response: {
            200: Type.Object({}, { additionalProperties: true, description: 'The OpenAPI 3.1 document of the console API' }),
            ...anyRequestErrorResponses(),
          },
        },
      },
      async () => (doc ??= buildConsoleDocument(routes, opts.config.publicBaseUrl, (id) => app.getSchema(id))),
    );
  };
}
