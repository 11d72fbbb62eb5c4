import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChildMessage, ParentMessage } from '../server.js';

const SERVER_ENTRY = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'server.ts');

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

function procRss(pid: number): number | null {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status);
    return match?.[1] ? Number(match[1]) * 1024 : null;
  } catch {
    return null;
  }
}

function waitFor<T extends ChildMessage['type']>(
  child: ChildProcess,
  type: T,
  timeoutMs: number,
): Promise<Extract<ChildMessage, { type: T }>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`no "${type}" message from the server child in ${timeoutMs} ms`)), timeoutMs);
    const onMessage = (message: ChildMessage) => {
      if (message.type === type) done(null, message as Extract<ChildMessage, { type: T }>);
      else if (message.type === 'error') done(new Error(`server child failed: ${message.message}`));
    };
    const onExit = (code: number | null) => done(new Error(`server child exited (code ${String(code)}) before "${type}"`));
    function done(err: Error | null, message?: Extract<ChildMessage, { type: T }>): void {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
      if (err || !message) reject(err ?? new Error('no message'));
      else resolve(message);
    }
    child.on('message', onMessage);
    child.on('exit', onExit);
  });
}

/** Forks bench/server.ts through tsx (as `toolrun serve` runs the sources) and waits until it listens. */
export async function startServerChild(name: string, mode: 'api' | 'bare', env: NodeJS.ProcessEnv): Promise<ServerChild> {
  const child = fork(SERVER_ENTRY, [mode], {
    execArgv: ['--import', 'tsx'],
    env,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const { url } = await waitFor(child, 'ready', 60_000).catch((err: unknown) => {
    child.kill('SIGKILL');
    throw err;
  });
  const pid = child.pid ?? 0;
  const report = () => {
    const reply = waitFor(child, 'rss', 5_000);
    child.send({ type: 'rss' } satisfies ParentMessage);
    return reply;
  };
  return {
    name,
    pid,
    url,
    async rss() {
      return procRss(pid) ?? (await report()).rss;
    },
    async heapUsed() {
      return (await report()).heapUsed;
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.send({ type: 'stop' } satisfies ParentMessage);
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
