// Real child processes of the toolrun CLI, for the CLI and end-to-end tests: spawned with a clean
// environment, bounded by deadlines, and killed (by their own pid) when a test ends early.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { captureChildLogs } from './test-logs.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BIN = path.join(ROOT, 'bin', 'toolrun.js');

/** The environment a child gets: ours without any toolrun setting, plus what the test names. */
export function cliEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^(TOOLRUN_|TEST_|AWS_)/.test(k)) continue;
    if (['DATABASE_URL', 'PORT', 'HOST', 'PUBLIC_BASE_URL', 'LOG_LEVEL', 'NODE_TEST_CONTEXT', 'NODE_OPTIONS'].includes(k)) continue;
    env[k] = v;
  }
  return { ...env, ...extra };
}

/** A fresh data directory the unprivileged embedded-PostgreSQL user can reach when we are root. */
export function makeDataDir(label: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `toolrun-${label}-`));
  fs.chmodSync(dir, 0o755);
  return dir;
}

const live = new Set<ChildProcess>();

/** Kills (SIGKILL, by pid) every child still running; for after hooks. */
export function killLiveChildren(): void {
  for (const child of live) {
    if (child.exitCode === null && child.signalCode === null && child.pid) {
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  live.clear();
}

/** nodeArgs go to node itself, before the entry (say, `--import` of a test-only hook). */
export function spawnCli(args: string[], env: NodeJS.ProcessEnv, nodeArgs: string[] = []): ChildProcess {
  const child = spawn(process.execPath, [...nodeArgs, BIN, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  captureChildLogs(`toolrun-${args.slice(0, 2).join('-')}`, child.pid, [child.stdout, child.stderr]);
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs `toolrun <args>` to completion (killed after timeoutMs). */
export async function runCli(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 90_000): Promise<CliResult> {
  const child = spawnCli(args, env);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      if (child.pid) process.kill(child.pid, 'SIGKILL');
      reject(new Error(`toolrun ${args.join(' ')} did not finish in ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/**
 * Polls until fn returns a value other than undefined/null/false, or fails at the deadline. An
 * error thrown by fn ends the wait at once.
 */
export async function waitFor<T>(what: string, fn: () => T | Promise<T>, timeoutMs = 30_000, intervalMs = 50): Promise<NonNullable<Exclude<T, false>>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value !== undefined && value !== null && value !== false) return value as NonNullable<Exclude<T, false>>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** True when no process has this pid any more (a zombie waiting to be reaped counts as gone). */
export function pidGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

/** The pid in <dataDir>/pg/postmaster.pid, or null when there is no such file. */
export function postmasterPid(dataDir: string): number | null {
  try {
    const pid = Number(fs.readFileSync(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/**
 * Stops an embedded PostgreSQL a failed test left behind on dataDir (by the pid in its pid file)
 * and removes the directory.
 */
export async function cleanupDataDir(dataDir: string): Promise<void> {
  const pid = postmasterPid(dataDir);
  if (pid && !pidGone(pid)) {
    const cmdline = fs.existsSync(`/proc/${pid}/cmdline`) ? fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8') : '';
    // Only a postgres serving this very directory (the pid may have been reused).
    if (cmdline.includes(path.join(dataDir, 'pg'))) {
      process.kill(pid, 'SIGQUIT');
      await waitFor(`postgres ${pid} to exit`, () => pidGone(pid), 15_000).catch(() => process.kill(pid, 'SIGKILL'));
    }
  }
  fs.rmSync(dataDir, { recursive: true, force: true });
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A long-running `toolrun` command (serve, worker) whose output is collected line by line. */
export class CliProcess {
  readonly child: ChildProcess;
  readonly stdoutLines: string[] = [];
  stdout = '';
  stderr = '';
  readonly exited: Promise<Exit>;
  private exit: Exit | null = null;

  constructor(
    readonly args: string[],
    env: NodeJS.ProcessEnv,
    nodeArgs: string[] = [],
  ) {
    this.child = spawnCli(args, env, nodeArgs);
    let partial = '';
    this.child.stdout?.on('data', (c: Buffer) => {
      this.stdout += c.toString();
      partial += c.toString();
      const lines = partial.split('\n');
      partial = lines.pop() ?? '';
      this.stdoutLines.push(...lines);
    });
    this.child.stderr?.on('data', (c: Buffer) => (this.stderr += c.toString()));
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => {
        this.exit = { code, signal };
        resolve(this.exit);
      });
    });
  }

  get pid(): number {
    if (!this.child.pid) throw new Error('the child has no pid');
    return this.child.pid;
  }

  /** The JSON log lines on stdout. */
  logs(): Record<string, unknown>[] {
    const out: Record<string, unknown>[] = [];
    for (const line of this.stdoutLines) {
      if (!line.startsWith('{')) continue;
      try {
        out.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // a non-JSON line starting with {
      }
    }
    return out;
  }

  /** Waits for a JSON log line whose msg is (or matches) msg; fails early if the process exits. */
  async waitForLog(msg: string | RegExp, timeoutMs = 90_000): Promise<Record<string, unknown>> {
    const matches = (m: unknown) => typeof m === 'string' && (typeof msg === 'string' ? m === msg : msg.test(m));
    return waitFor(
      `"${String(msg)}" from toolrun ${this.args.join(' ')}`,
      () => {
        const found = this.logs().find((l) => matches(l.msg));
        if (found) return found;
        if (this.exit) {
          throw new Error(`toolrun ${this.args.join(' ')} exited (${JSON.stringify(this.exit)})\nstdout: ${this.stdout}\nstderr: ${this.stderr}`);
        }
        return null;
      },
      timeoutMs,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\nstdout: ${this.stdout}\nstderr: ${this.stderr}`);
    });
  }

  /** Sends a signal (by pid) and waits for the process to exit. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 60_000): Promise<Exit> {
    if (!this.exit) process.kill(this.pid, signal);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`toolrun ${this.args.join(' ')} did not exit within ${timeoutMs} ms of ${signal}`)), timeoutMs);
    });
    try {
      return await Promise.race([this.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}
