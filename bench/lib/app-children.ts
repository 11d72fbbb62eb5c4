/**
 * Child processes of the benchmarks (bench/app-server.ts, bench/webhook-receivers.ts and, through
 * bench/lib/children.ts, bench/server.ts), forked through tsx with IPC, and what /proc says about
 * a child and everything it started (ffmpeg, ffprobe): resident memory summed over the process
 * tree, and CPU seconds including reaped children.
 */
import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DirectJob, DirectResult } from './bench-tools.js';
import { procRssBytes } from './upload-io.js';

const BENCH_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** What runs in-process beside the API or in a worker: everything (as serve / toolrun worker), nothing, or one kind. */
export type Workers = 'all' | 'none' | 'runs' | 'webhooks';
export type AppMode = 'api' | 'worker' | 'direct';

export type AppParentMessage =
  | { type: 'rss' }
  | { type: 'stop' }
  | { type: 'workers'; which: Workers }
  | { type: 'direct'; job: DirectJob };
export type AppChildMessage =
  | { type: 'ready'; url: string }
  | { type: 'rss'; rss: number; heapUsed: number }
  | { type: 'error'; message: string }
  | { type: 'workers-done' }
  | { type: 'direct-done'; result: DirectResult | null; error: string | null; maxRssBytes: number };

interface Message {
  type: string;
}

export interface Child<P extends Message, C extends Message> {
  pid: number;
  process: ChildProcess;
  send(message: P): void;
  /** The next message of this type (an 'error' message or an exit rejects). */
  next<T extends C['type']>(type: T, timeoutMs: number): Promise<Extract<C, { type: T }>>;
  stop(): Promise<void>;
  /** The end of what it wrote (stdout and stderr, interleaved as they came), for a failure report. */
  logTail(): string;
}

/** How much of a child's output is kept for a failure report (bench/lib/service.ts prints the last lines). */
const LOG_TAIL_BYTES = 16 * 1024;

/**
 * Forks bench/<entry> through tsx with IPC; `stop` sends {type:'stop'} and kills it after 15 s.
 * BENCH_CHILD_NODE_ARGS adds node flags to every child (space-separated), for a look inside one:
 * `--cpu-prof --cpu-prof-dir=/tmp/prof` profiles each (node refuses --cpu-prof in NODE_OPTIONS).
 * `wrapper` is a command line node runs under (valgrind and its options); `nodeArgs`, node flags
 * of this child alone.
 */
export function forkChild<P extends Message, C extends Message>(
  entry: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  opts: { wrapper?: string[]; nodeArgs?: string[] } = {},
): Child<P, C> {
  const extra = (process.env.BENCH_CHILD_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const nodeArgs = ['--import', 'tsx', ...(opts.nodeArgs ?? []), ...extra];
  // A wrapper (valgrind) runs node itself; the IPC channel's descriptor and variable pass through it.
  const [wrapperBin, ...wrapperArgs] = opts.wrapper ?? [];
  const child = fork(path.join(BENCH_DIR, entry), args, {
    ...(wrapperBin ? { execPath: wrapperBin } : {}),
    execArgv: wrapperBin ? [...wrapperArgs, process.execPath, ...nodeArgs] : nodeArgs,
    env,
    // Piped, passed through as it comes and the end of it kept: a failed bench shows what its children said last.
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let tail = '';
  const keep = (to: NodeJS.WriteStream) => (chunk: Buffer) => {
    to.write(chunk);
    tail = (tail + chunk.toString('utf8')).slice(-LOG_TAIL_BYTES);
  };
  child.stdout?.on('data', keep(process.stdout));
  child.stderr?.on('data', keep(process.stderr));
  const next = <T extends C['type']>(type: T, timeoutMs: number) =>
    new Promise<Extract<C, { type: T }>>((resolve, reject) => {
      const timer = setTimeout(() => done(new Error(`no "${type}" message from ${entry} in ${timeoutMs} ms`)), timeoutMs);
      const onMessage = (m: C) => {
        if (m.type === type) done(null, m as Extract<C, { type: T }>);
        else if (m.type === 'error') done(new Error(`${entry} failed: ${(m as Message & { message?: string }).message ?? ''}`));
      };
      const onExit = (code: number | null) => done(new Error(`${entry} exited (code ${String(code)}) before "${type}"`));
      function done(err: Error | null, m?: Extract<C, { type: T }>): void {
        clearTimeout(timer);
        child.off('message', onMessage);
        child.off('exit', onExit);
        if (err || !m) reject(err ?? new Error('no message'));
        else resolve(m);
      }
      child.on('message', onMessage);
      child.on('exit', onExit);
    });
  return {
    pid: child.pid ?? 0,
    process: child,
    send: (m) => child.send(m),
    next,
    logTail: () => tail,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.send({ type: 'stop' });
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

export interface AppChild extends Child<AppParentMessage, AppChildMessage> {
  url: string;
  /** Stops what runs beside the API in that process and starts `which` instead. */
  setWorkers(which: Workers): Promise<void>;
  /** Runs a tool's runner in that process (direct mode). */
  direct(job: DirectJob): Promise<DirectResult & { maxRssBytes: number }>;
}

/** bench/app-server.ts in one mode, once it is ready (the API listening, the workers started). */
export async function startAppChild(mode: AppMode, env: NodeJS.ProcessEnv): Promise<AppChild> {
  const child = forkChild<AppParentMessage, AppChildMessage>('app-server.ts', [mode], env);
  const ready = await child.next('ready', 90_000).catch((err: unknown) => {
    child.process.kill('SIGKILL');
    throw err;
  });
  return {
    ...child,
    url: ready.url,
    async setWorkers(which) {
      const done = child.next('workers-done', 120_000);
      child.send({ type: 'workers', which });
      await done;
    },
    async direct(job) {
      const done = child.next('direct-done', 30 * 60_000);
      child.send({ type: 'direct', job });
      const r = await done;
      if (!r.result) throw new Error(`direct ${job.tool} failed: ${r.error ?? '?'}`);
      return { ...r.result, maxRssBytes: r.maxRssBytes };
    },
  };
}

/** The pid and all its descendants (from /proc/<pid>/task/<tid>/children). */
export function processTree(pid: number): number[] {
  const out: number[] = [];
  const visit = (p: number) => {
    out.push(p);
    let tasks: string[] = [];
    try {
      tasks = fs.readdirSync(`/proc/${p}/task`);
    } catch {
      return;
    }
    for (const t of tasks) {
      let kids = '';
      try {
        kids = fs.readFileSync(`/proc/${p}/task/${t}/children`, 'utf8');
      } catch {
        continue;
      }
      for (const k of kids.split(' ').filter(Boolean)) visit(Number(k));
    }
  };
  visit(pid);
  return out;
}

export const treeRssBytes = (pid: number) => processTree(pid).reduce((n, p) => n + (procRssBytes(p) ?? 0), 0);

/**
 * CPU seconds of a process from /proc/<pid>/stat: its own (all threads: utime + stime) and its
 * waited-for children's (cutime + cstime); zeros for a process that is gone.
 */
export function procCpu(pid: number): { own: number; reaped: number } {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { own: (Number(f[11]) + Number(f[12])) / 100, reaped: (Number(f[13]) + Number(f[14])) / 100 };
  } catch {
    return { own: 0, reaped: 0 };
  }
}

/** CPU seconds of a process: its own (all threads) plus its waited-for children's. */
export function cpuWithChildren(pid: number): number {
  const { own, reaped } = procCpu(pid);
  return own + reaped;
}

/**
 * CPU seconds of everything under `root` but root's own threads (its child processes, alive or
 * reaped: an embedded PostgreSQL, app children, ffmpeg). Deltas are exact while no process of the
 * tree starts or ends in between, except reaped ones, whose time moves to their parent's account.
 */
export function descendantsCpuSeconds(root: number): number {
  const own = procCpu(root).own;
  return processTree(root).reduce((n, p) => n + cpuWithChildren(p), 0) - own;
}

/** Peak of the tree's summed RSS, sampled every `everyMs` until stopped; `before` is the first sample. */
export function sampleTree(pid: number, everyMs = 100): { stop(): { before: number; peak: number } } {
  const before = treeRssBytes(pid);
  let peak = before;
  const timer = setInterval(() => {
    peak = Math.max(peak, treeRssBytes(pid));
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      peak = Math.max(peak, treeRssBytes(pid));
      return { before, peak };
    },
  };
}
