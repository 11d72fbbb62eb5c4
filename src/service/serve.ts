import net from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import { buildApp } from './app.js';
import { resolveMediaBinaries } from '../media/binaries.js';
import type { Metrics } from '../metrics/metrics.js';
import { createStorage } from '../storage/create.js';
import { createToolRegistry } from '../tools/registry.js';
import { openDatabase, type OpenedDatabase } from './database.js';
import { seedDemo, showDemoSeed } from './seed.js';
import { startBackgroundWork } from './workers.js';

export interface RunningService {
  app: FastifyInstance;
  url: string;
  database: OpenedDatabase;
  stop(): Promise<void>;
}

/** A port nothing listens on right now, on this host. */
export async function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, host, () => {
      const address = srv.address();
      srv.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * PORT=0 asks for any free port. The service hands out URLs under PUBLIC_BASE_URL, whose default
 * is derived from PORT, so the port is picked before the app is built and the default follows it.
 */
async function withConcretePort(config: Config): Promise<Config> {
  if (config.port !== 0) return config;
  const port = await freePort(config.host);
  const base = new URL(config.publicBaseUrl);
  if (base.port !== '0') return { ...config, port };
  base.port = String(port);
  return { ...config, port, publicBaseUrl: base.toString().replace(/\/+$/, '') };
}

export interface ServiceOptions {
  /** false: the API only (`serve --no-workers`), for deployments with separate worker processes. */
  workers?: boolean;
}

/** `toolrun serve`: the API with in-process run workers and the expiry janitor. */
export async function startService(
  requested: Config,
  logger: Logger,
  out: NodeJS.WritableStream = process.stdout,
  options: ServiceOptions = {},
): Promise<RunningService> {
  const config = await withConcretePort(requested);
  const database = await openDatabase(config, logger, { poolSize: 20, applicationName: 'toolrun-api' });
  let app: FastifyInstance | null = null;
  try {
    const storage = await createStorage(config, database.db.pool);
    const tools = createToolRegistry();
    const media = resolveMediaBinaries();
    // Without a token /metrics is off, and nothing needs counting (nor prom-client loading: ~8 MiB).
    const metrics = config.metrics.token
      ? new (await import('../metrics/metrics.js')).Metrics({ db: database.db, logger, toolIds: tools.listed().map((t) => t.id) })
      : undefined;
    app = await buildApp({ config, db: database.db, logger, tools, storage, media, ...(metrics ? { metrics } : {}) });
    await app.listen({ port: config.port, host: config.host });
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
    // Seeded once listening: a start that fails (say, the port is taken) must not use up the one
    // showing of the demo key.
    const seeded = await seedDemo(config, database.db);
    if (seeded) {
      // Shown once, never logged: the full key is shown only here (on the terminal, or in a file).
      await showDemoSeed(seeded, url, config.dataDir, out).catch((err: unknown) => {
        logger.error(
          { err, data_dir: config.dataDir },
          'could not write the demo key and invite link to the data directory; make a key and a link with `toolrun admin key create` and `toolrun admin member invite`',
        );
      });
    }
    const started = app;
    const background = options.workers === false ? null : await startBackgroundWork({
      config,
      db: database.db,
      storage,
      tools,
      media,
      logger,
      ...(metrics ? { metrics } : {}),
    });
    // Logged last: from here the API, the workers and the janitor all run.
    logger.info({ url, public_base_url: config.publicBaseUrl, env: config.env, workers: background !== null }, 'toolrun API listening');
    return {
      app: started,
      url,
      database,
      async stop() {
        // New requests are refused (503) while requests in flight and running work finish within
        // the grace period; a client still sending or reading after it is cut off.
        const graceMs = config.runs.shutdownGraceSeconds * 1000;
        const cutOff = setTimeout(() => started.server.closeAllConnections(), graceMs);
        try {
          await Promise.all([background?.stop(), started.close()]);
        } finally {
          clearTimeout(cutOff);
        }
        await database.close();
      },
    };
  } catch (err) {
    await app?.close().catch(() => undefined);
    await database.close();
    throw err;
  }
}
