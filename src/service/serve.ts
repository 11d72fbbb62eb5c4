import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import { buildApp } from '../http/app.js';
import { createToolRegistry } from '../tools/registry.js';
import { openDatabase, type OpenedDatabase } from './database.js';
import { seedDemo } from './seed.js';

export interface RunningService {
  app: FastifyInstance;
  url: string;
  database: OpenedDatabase;
  stop(): Promise<void>;
}

/** `toolrun serve`: the API (and, once the Runs issue lands, in-process workers). */
export async function startService(config: Config, logger: Logger, out: NodeJS.WritableStream = process.stdout): Promise<RunningService> {
  const database = await openDatabase(config, logger, { adoptOrphans: true, poolSize: 20, applicationName: 'toolrun-api' });
  let app: FastifyInstance | null = null;
  try {
    const seeded = await seedDemo(config, database.db);
    app = await buildApp({ config, db: database.db, logger, tools: createToolRegistry() });
    await app.listen({ port: config.port, host: config.host });
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
    logger.info({ url, public_base_url: config.publicBaseUrl, env: config.env }, 'toolrun API listening');
    if (seeded) {
      // Printed once on the terminal, never logged: the full key is shown only here.
      out.write(
        `\nDemo team created (plan pro, 1000 Sparks). Its API key, shown only now:\n\n  ${seeded.key}\n\n` +
          `Try it:\n\n  curl -H "Authorization: Bearer ${seeded.key}" ${url}/v1/me\n\n`,
      );
    }
    const started = app;
    return {
      app: started,
      url,
      database,
      async stop() {
        await started.close();
        await database.close();
      },
    };
  } catch (err) {
    await app?.close().catch(() => undefined);
    await database.close();
    throw err;
  }
}
