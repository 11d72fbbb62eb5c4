import net from 'node:net';
import type { Logger } from 'pino';
import { LocalStorage } from '../../src/storage/local.js';
import { testLogger } from './test-logs.js';
import type { SignInDelays } from '../../src/console/throttle.js';
import type { ToolRegistry } from '../../src/tools/registry.js';
import { createTestApp, type TestApp } from './app.js';
import type { TestDatabase } from './db.js';

export interface TestServer extends TestApp {
  url: string;
  logger: Logger;
  localStorage(): LocalStorage;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      srv.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** The real app listening on a real socket, with PUBLIC_BASE_URL pointing at it. */
export async function startTestServer(
  opts: { env?: Record<string, string>; database?: TestDatabase; tools?: ToolRegistry; signInDelays?: SignInDelays } = {},
): Promise<TestServer> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const t = await createTestApp({
    env: { PORT: String(port), HOST: '127.0.0.1', PUBLIC_BASE_URL: url, ...opts.env },
    ...(opts.database ? { database: opts.database } : {}),
    ...(opts.tools ? { tools: opts.tools } : {}),
    ...(opts.signInDelays ? { signInDelays: opts.signInDelays } : {}),
  });
  await t.app.listen({ port, host: '127.0.0.1' });
  return {
    ...t,
    url,
    logger: testLogger('silent'),
    localStorage() {
      if (!(t.storage instanceof LocalStorage)) throw new Error('not the local backend');
      return t.storage;
    },
  };
}
