import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { loadConfig, type Config } from '../../src/config/config.js';
import { buildApp } from '../../src/http/app.js';
import { createLogger } from '../../src/logger.js';
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

export function testConfig(env: Record<string, string> = {}): Config {
  return loadConfig({ TOOLRUN_ENV: 'test', TOOLRUN_DATA_DIR: '/tmp/toolrun-test-unused', LOG_LEVEL: 'info', ...env });
}

export interface TestApp {
  app: FastifyInstance;
  config: Config;
  database: TestDatabase;
  logs: LogSink;
  close(): Promise<void>;
}

export async function createTestApp(opts: { env?: Record<string, string>; tools?: ToolRegistry; database?: TestDatabase } = {}): Promise<TestApp> {
  const database = opts.database ?? (await createTestDatabase());
  const config = testConfig(opts.env);
  const logs = new LogSink();
  const logger = createLogger(config.logLevel, logs);
  const app = await buildApp({ config, db: database.db, logger, tools: opts.tools ?? createToolRegistry() });
  return {
    app,
    config,
    database,
    logs,
    async close() {
      await app.close();
      if (!opts.database) await database.db.close();
    },
  };
}
