/**
 * bench/server.ts as a child process of bench/http.ts and bench/upload.ts (forked through tsx
 * like the other bench children, bench/lib/app-children.ts), with its memory read from /proc.
 */
import os from 'node:os';
import path from 'node:path';
import type { ChildMessage, ParentMessage } from '../server.js';
import { forkChild } from './app-children.js';
import { serviceEnv } from './service.js';
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
  /** The end of what it wrote, for a failure report. */
  logTail(): string;
}

/** Forks bench/server.ts in one mode and waits until it listens. */
export async function startServerChild(
  name: string,
  mode: 'api' | 'bare',
  env: NodeJS.ProcessEnv,
  opts: { wrapper?: string[]; nodeArgs?: string[]; readyTimeoutMs?: number } = {},
): Promise<ServerChild> {
  const child = forkChild<ParentMessage, ChildMessage>('server.ts', [mode], env, { ...(opts.wrapper ? { wrapper: opts.wrapper } : {}), ...(opts.nodeArgs ? { nodeArgs: opts.nodeArgs } : {}) });
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
    logTail: () => child.logTail(),
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
  opts: { wrapper?: string[]; nodeArgs?: string[]; readyTimeoutMs?: number } = {},
): Promise<ServerChild> {
  // No bench directory to hand: a fixed data directory, which a caller that stores files replaces.
  const dataDir = path.join(os.tmpdir(), 'toolrun-bench-unused');
  return startServerChild('api', 'api', serviceEnv({ dir: os.tmpdir() }, { url: databaseUrl }, { logLevel, dataDir, set: { PORT: '0', ...env } }), opts);
}
