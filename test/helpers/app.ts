import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { loadConfig, type Config } from '../../src/config/config.js';
import { buildApp } from '../../src/service/app.js';
import type { SignInDelays } from '../../src/console/throttle.js';
import { resolveMediaBinaries } from '../../src/media/binaries.js';
import { createStorage } from '../../src/storage/create.js';
import type { Storage } from '../../src/storage/storage.js';
import { testLogger } from './test-logs.js';
import { createToolRegistry, type ToolRegistry } from '../../src/tools/registry.js';
import { createTestDatabase, type TestDatabase } from './db.js';

/** Collects log lines in memory, so tests can assert what was (not) logged. */
export class LogSink extends Writable {
  lines: string[] = [];
  override _write(chunk: Buffer, _enc: string, cb: () => void): void {
    this.lines.push(...chunk.toString().split('\n').filter(Boolean));
    cb();
  }
  text(): string {
    return this.lines.join('\n');
  }
}

/** A fresh data directory per app, removed by the OS temp cleaner (tests leave it for inspection). */
export function testConfig(env: Record<string, string> = {}): Config {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-app-'));
  return loadConfig({ TOOLRUN_ENV: 'test', TOOLRUN_DATA_DIR: dataDir, LOG_LEVEL: 'info', ...env });
}

export interface TestApp {
  app: FastifyInstance;
  config: Config;
  database: TestDatabase;
  logs: LogSink;
  storage: Storage;
  close(): Promise<void>;
}

export async function createTestApp(
  opts: { env?: Record<string, string>; tools?: ToolRegistry; database?: TestDatabase; extraRoutes?: FastifyPluginAsync; signInDelays?: SignInDelays } = {},
): Promise<TestApp> {
  const database = opts.database ?? (await createTestDatabase());
  const config = testConfig(opts.env);
  const logs = new LogSink();
  const logger = testLogger(config.logLevel, logs);
  const storage = await createStorage(config, database.db.pool);
  const app = await buildApp({
    config,
    db: database.db,
    logger,
    tools: opts.tools ?? createToolRegistry(),
    storage,
    media: resolveMediaBinaries(),
    ...(opts.extraRoutes ? { extraRoutes: opts.extraRoutes } : {}),
    ...(opts.signInDelays ? { signInDelays: opts.signInDelays } : {}),
  });
  return {
    app,
    config,
    database,
    logs,
    storage,
    async close() {
      await app.close();
      if (!opts.database) await database.db.close();
      if (config.storage.kind === 'local') fs.rmSync(config.dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Asks until the answer has this status (bounded). A change made around the app, as the operator
 * CLI makes it from another process, reaches the app's memory of API keys through a PostgreSQL
 * notification a moment after its commit: what the app answers then is the thing to wait for.
 */
export async function answeredWith<R extends { statusCode: number }>(status: number, ask: () => Promise<R>, timeoutMs = 10_000): Promise<R> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await ask();
    if (res.statusCode === status) return res;
    if (Date.now() > deadline) return res; // the caller's assertion on it says what came instead
    await new Promise((r) => setTimeout(r, 20));
  }
}
