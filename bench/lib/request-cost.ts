/**
 * What one request costs a server process, in two measures that other load on the machine cannot
 * blur much (issue 29): CPU time from /proc (every thread's run time, nanoseconds, from
 * schedstat) over a known number of requests, and instructions counted by valgrind's callgrind
 * over requests sent one at a time (the same count whatever else the machine does).
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

/** Nanoseconds on a CPU so far, summed over the process's threads (0 once it is gone). */
export function cpuNs(pid: number): number {
  let total = 0;
  let tasks: string[] = [];
  try {
    tasks = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return 0;
  }
  for (const tid of tasks) {
    try {
      total += Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0] ?? 0);
    } catch {
      // the thread ended meanwhile: what it ran is lost to both readings alike
    }
  }
  return total;
}

/** CPU nanoseconds of a set of processes between start() and the returned stop(). */
export function cpuMeter(pids: () => number[]): () => number {
  const before = new Map(pids().map((p) => [p, cpuNs(p)]));
  return () => pids().reduce((sum, p) => sum + Math.max(0, cpuNs(p) - (before.get(p) ?? 0)), 0);
}

/** Sends `count` GETs one at a time on one keep-alive connection; rejects on an unexpected status. */
export async function sequentialGets(url: string, headers: Record<string, string>, count: number, expect: number): Promise<void> {
  const u = new URL(url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    for (let i = 0; i < count; i++) {
      const status = await new Promise<number>((resolve, reject) => {
        const req = http.get({ host: u.hostname, port: u.port, path: u.pathname, agent, headers }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
          res.on('error', reject);
        });
        req.on('error', reject);
      });
      if (status !== expect) throw new Error(`GET ${u.pathname} answered ${status}, expected ${expect}`);
    }
  } finally {
    agent.destroy();
  }
}

const VALGRIND = '/usr/bin/valgrind';

/** Instructions per request: the event-loop thread's, and all threads' together. */
export interface InstructionCount {
  main: number;
  all: number;
}

/** Whether callgrind can be used here (valgrind installed), and its version line. */
export function callgrindVersion(): Promise<string | null> {
  return new Promise((resolve) => execFile(VALGRIND, ['--version'], { timeout: 10_000 }, (err, out) => resolve(err ? null : out.trim())));
}

/**
 * Node under callgrind with instrumentation off until asked (so start-up runs at valgrind's plain
 * speed), writing its dumps into a fresh directory.
 */
export function callgrindWrapper(): { wrapper: string[]; dir: string; cleanup(): void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-callgrind-'));
  return {
    dir,
    cleanup: () => fs.rmSync(dir, { recursive: true, force: true }),
    wrapper: [VALGRIND, '--tool=callgrind', '--instr-atstart=no', '--separate-threads=yes', `--callgrind-out-file=${path.join(dir, 'callgrind.out.%p')}`, '--quiet'],
  };
}

/**
 * valgrind names its control pipes after the process's USER (or LOGNAME) and HOST variables;
 * callgrind_control finds them by its own, so it runs with the target's values (the API's HOST
 * is its listening address).
 */
function targetNaming(pid: number): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.HOST;
  delete env.USER;
  delete env.LOGNAME;
  for (const entry of fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
    const eq = entry.indexOf('=');
    const name = entry.slice(0, eq);
    if (name === 'HOST' || name === 'USER' || name === 'LOGNAME') env[name] = entry.slice(eq + 1);
  }
  return env;
}

function control(args: string[]): Promise<string> {
  const pid = Number(args.at(-1));
  return new Promise((resolve, reject) =>
    execFile('callgrind_control', args, { timeout: 120_000, env: targetNaming(pid) }, (err, out, errOut) => (err ? reject(new Error(`callgrind_control ${args.join(' ')}: ${errOut || err.message}`)) : resolve(out))),
  );
}

/** The "totals:"/"summary:" instruction count of a callgrind dump, or null while it is being written. */
function dumpTotal(file: string): number | null {
  const m = /^(?:totals|summary):\s+(\d+)/m.exec(fs.readFileSync(file, 'utf8'));
  return m?.[1] ? Number(m[1]) : null;
}

/**
 * The dumps one request for a dump writes (callgrind runs with --separate-threads, so one file per
 * thread, named ...-NN by thread), once all are complete: callgrind writes them asynchronously.
 * The main thread is -01: the event loop, where requests are served; the others are V8's
 * compiler and garbage-collection helpers and libuv's pool.
 */
async function newDumpTotals(dir: string, before: Set<string>, timeoutMs = 120_000): Promise<{ main: number; all: number }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const dumps = fs.readdirSync(dir).filter((f) => !before.has(f));
    const totals = dumps.map((f) => ({ f, total: dumpTotal(path.join(dir, f)) }));
    const main = totals.find((t) => t.f.endsWith('-01'));
    if (main && main.total !== null && totals.every((t) => t.total !== null)) {
      // A moment more, in case another thread's file is still being created.
      await new Promise((resolve) => setTimeout(resolve, 200));
      if (fs.readdirSync(dir).filter((f) => !before.has(f)).length === dumps.length) {
        return { main: main.total, all: totals.reduce((sum, t) => sum + (t.total ?? 0), 0) };
      }
      continue;
    }
    if (Date.now() > deadline) throw new Error(`no complete callgrind dump in ${dir} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Instructions the process `pid` (started under callgrindWrapper) executes for `requests` GETs of
 * `url` sent one at a time after `warmup` untimed ones: instrumentation is switched on, the
 * requests sent, the counters dumped and switched off again. Per request, the mean.
 */
export async function instructionsPerRequest(opts: {
  pid: number;
  dir: string;
  url: string;
  headers: Record<string, string>;
  expect: number;
  warmup: number;
  requests: number;
  /** Runs after the warm-up, before counting starts (a full garbage collection, say). */
  beforeCounting?: () => Promise<void>;
}): Promise<InstructionCount> {
  await sequentialGets(opts.url, opts.headers, opts.warmup, opts.expect);
  await opts.beforeCounting?.();
  const before = new Set(fs.readdirSync(opts.dir));
  await control(['--instr=on', String(opts.pid)]);
  await control(['--zero', String(opts.pid)]);
  await sequentialGets(opts.url, opts.headers, opts.requests, opts.expect);
  await control(['--dump', String(opts.pid)]);
  const totals = await newDumpTotals(opts.dir, before);
  await control(['--instr=off', String(opts.pid)]);
  return { main: totals.main / opts.requests, all: totals.all / opts.requests };
}
