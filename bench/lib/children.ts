/**
 * bench/server.ts as a child process of bench/http.ts and bench/upload.ts (forked through tsx
 * like the other bench children, bench/lib/app-children.ts), with its memory read from /proc.
 */
import os from 'node:os';
import path from 'node:path';
import type { ChildMessage, ParentMessage } from '../server.js';
import { forkChild } from './app-children.js';
import { procRssBytes } from './upload-io.js';

export interface ServerChild {
  name: string;
  pid: number;
  url: string;
  /** Resident set size in bytes: /proc/<pid>/status VmRSS, or what the child reports. */
  rss(): Promise<number>;
  /** V8 heap in use, as the child reports it. */
  heapUsed(): Promise<number>;
  stop(): Promise<void>;
}

/** Forks bench/server.ts in one mode and waits until it listens. */
export async function startServerChild(
  name: string,
  mode: 'api' | 'bare',
  env: NodeJS.ProcessEnv,
  opts: { wrapper?: string[]; readyTimeoutMs?: number } = {},
): Promise<ServerChild> {
  const child = forkChild<ParentMessage, ChildMessage>('server.ts', [mode], env, opts.wrapper ? { wrapper: opts.wrapper } : {});
  const { url } = await child.next('ready', opts.readyTimeoutMs ?? 60_000).catch((err: unknown) => {
    child.process.kill('SIGKILL');
    throw err;
  });
  const report = () => {
    const reply = child.next('rss', 5_000);
    child.send({ type: 'rss' });
    return reply;
  };
  return {
    name,
    pid: child.pid,
    url,
    async rss() {
      return procRssBytes(child.pid) ?? (await report()).rss;
    },
    async heapUsed() {
      return (await report()).heapUsed;
    },
    stop: () => child.stop(),
  };
}

/**
 * The real API (bench/server.ts in api mode) on a bench database: any free loopback port, no demo
 * team, the given log level; `env` adds or overrides settings (data directory, storage, ...).
 */
export function startApiChild(
  databaseUrl: string,
  logLevel: string,
  env: NodeJS.ProcessEnv = {},
  opts: { wrapper?: string[]; readyTimeoutMs?: number } = {},
): Promise<ServerChild> {
  return startServerChild('api', 'api', {
    ...process.env,
    DATABASE_URL: databaseUrl,
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: logLevel,
    TOOLRUN_ENV: 'development',
    TOOLRUN_DEMO_SEED: '0',
    TOOLRUN_DATA_DIR: path.join(os.tmpdir(), 'toolrun-bench-unused'),
    ...env,
  }, opts);
}
