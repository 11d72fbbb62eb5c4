// The set-up every console test file shares: a fresh test database and the real app listening on a
// socket over it, made by a before hook and closed by an after hook that consoleSuite() registers
// itself. The database is the file's own (not the server's), so a test can start a second server
// on it (another PUBLIC_BASE_URL, a trusted proxy) and close that one alone.
import { after, before } from 'node:test';
import type { Db } from '../../src/db/pool.js';
import type { SignInDelays } from '../../src/console/throttle.js';
import type { ToolRegistry } from '../../src/tools/registry.js';
import { createTestDatabase, type TestDatabase } from './db.js';
import { startTestServer, type TestServer } from './server.js';

export interface ConsoleSuiteOptions {
  env?: Record<string, string>;
  /** Called in the before hook, so that no registry is built when the file is imported. */
  tools?: () => ToolRegistry;
  signInDelays?: SignInDelays;
  /** More set-up once the server listens (teams, a browser, a receiver). */
  setUp?: (s: TestServer) => Promise<void>;
  /** Runs before the server and its database close: whatever uses them (workers, browsers) stops here. */
  tearDown?: () => Promise<void>;
}

/** What the tests of a file read once the before hook has run (each throws before that). */
export interface ConsoleSuite {
  server(): TestServer;
  url(): string;
  db(): Db;
  database(): TestDatabase;
}

export function consoleSuite(opts: ConsoleSuiteOptions = {}): ConsoleSuite {
  let database: TestDatabase | undefined;
  let server: TestServer | undefined;

  before(async () => {
    database = await createTestDatabase();
    server = await startTestServer({
      database,
      ...(opts.env ? { env: opts.env } : {}),
      ...(opts.tools ? { tools: opts.tools() } : {}),
      ...(opts.signInDelays ? { signInDelays: opts.signInDelays } : {}),
    });
    await opts.setUp?.(server);
  });
  after(async () => {
    try {
      await opts.tearDown?.();
    } finally {
      await server?.close();
      await database?.db.close();
    }
  });

  const started = (): TestServer => {
    if (!server) throw new Error('the console suite has not started: its before hook has not run');
    return server;
  };
  return {
    server: started,
    url: () => started().url,
    db: () => started().database.db,
    database: () => started().database,
  };
}
