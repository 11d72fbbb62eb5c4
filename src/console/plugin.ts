import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Config } from '../config/config.js';
import type { Db } from '../db/pool.js';
import type { MediaBinaries } from '../media/binaries.js';
import type { Storage } from '../storage/storage.js';
import type { ToolRegistry } from '../tools/registry.js';
import { anyRequestErrorResponses } from '../core/schemas.js';
import { consoleGuard } from './guard.js';
import { buildConsoleDocument, documentedRoute, type DocumentedRoute } from './openapi.js';
import { DummyHash } from './passwords.js';
import { keyRoutes } from './routes-keys.js';
import { memberRoutes } from './routes-members.js';
import { playgroundRoutes } from './routes-playground.js';
import { runConsoleRoutes } from './routes-runs.js';
import { usageRoutes } from './routes-usage.js';
import { sessionRoutes } from './routes-session.js';
import { webhookConsoleRoutes } from './routes-webhooks.js';

export interface ConsoleDeps {
  config: Config;
  db: Db;
  /** The same registry, storage and media binaries as /v1: app runs and playground uploads go through the same code. */
  tools: ToolRegistry;
  storage: Storage;
  media: MediaBinaries;
  dummyHash: DummyHash;
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
      const documented = documentedRoute(route);
      if (documented) routes.push(documented);
    });
    app.decorateRequest('consoleSession', null);
    app.addHook('onRequest', consoleGuard(opts.config, opts.db));

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
