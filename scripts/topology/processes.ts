// The `toolrun` processes of the topology: real OS processes (`node bin/toolrun.js ...`), each
// on its host (inside its network namespace when there is one), with its JSON log lines kept for
// the summary and for failures.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { captureChildLogs } from '../../test/helpers/test-logs.js';
import type { Host, Network } from './network.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = path.join(ROOT, 'bin', 'toolrun.js');
/** Log lines kept per process; request logs beyond this are counted, not kept. */
const MAX_LINES = 5000;

const live = new Set<ServiceProcess>();

/** SIGKILLs (by pid) every topology process still running; for exit handlers. */
export function killAllSync(): void {
  for (const p of live) p.signal('SIGKILL');
}

export type LogLine = Record<string, unknown>;

export class ServiceProcess {
  readonly child: ChildProcess;
  readonly lines: LogLine[] = [];
  /** Completed requests this process logged, by status code. */
  readonly requestsByStatus = new Map<number, number>();
  stderr = '';
  private partial = '';
  private exitInfo: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(
    readonly name: string,
    readonly host: Host,
    network: Network,
    args: string[],
    env: NodeJS.ProcessEnv,
  ) {
    const c = network.command(host, process.execPath, [BIN, ...args]);
    this.child = spawn(c.cmd, c.args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    // Under `npm test` the logs join the suite's credential scan (a no-op otherwise).
    captureChildLogs(`topology-${name}`, this.child.pid, [this.child.stdout, this.child.stderr]);
    this.child.stdout?.on('data', (chunk: Buffer) => this.take(chunk.toString()));
    this.child.stderr?.on('data', (chunk: Buffer) => {
      if (this.stderr.length < 1_000_000) this.stderr += chunk.toString();
    });
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => {
        this.exitInfo = { code, signal };
        live.delete(this);
        resolve(this.exitInfo);
      });
    });
    live.add(this);
  }

  private take(text: string): void {
    const parts = (this.partial + text).split('\n');
    this.partial = parts.pop() ?? '';
    for (const raw of parts) {
      if (!raw.startsWith('{')) continue;
      let line: LogLine;
      try {
        line = JSON.parse(raw) as LogLine;
      } catch {
        continue;
      }
      const res = line.res as { statusCode?: number } | undefined;
      if (line.msg === 'request completed' && typeof res?.statusCode === 'number') {
        this.requestsByStatus.set(res.statusCode, (this.requestsByStatus.get(res.statusCode) ?? 0) + 1);
        continue;
      }
      if (this.lines.length < MAX_LINES) this.lines.push(line);
    }
  }

  get pid(): number {
    if (!this.child.pid) throw new Error(`${this.name} has no pid`);
    return this.child.pid;
  }

  get alive(): boolean {
    return this.exitInfo === null;
  }

  /** Log lines at warn (40) or above. */
  problems(): LogLine[] {
    return this.lines.filter((l) => typeof l.level === 'number' && l.level >= 40);
  }

  /** Waits for a log line with this msg; fails when the process exits first or at the deadline. */
  async waitForLog(msg: string, timeoutMs: number): Promise<LogLine> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.lines.find((l) => l.msg === msg);
      if (found) return found;
      if (this.exitInfo) throw new Error(`${this.name} exited (${JSON.stringify(this.exitInfo)}) before "${msg}"\nstderr: ${this.stderr.slice(-4000)}`);
      if (Date.now() > deadline) throw new Error(`${this.name}: no "${msg}" within ${timeoutMs} ms\nstderr: ${this.stderr.slice(-4000)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  signal(sig: NodeJS.Signals): void {
    if (!this.alive || !this.child.pid) return;
    try {
      process.kill(this.child.pid, sig);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
    }
  }

  /** SIGTERM (a graceful stop), then SIGKILL if it has not exited within graceMs. */
  async stop(graceMs: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (!this.alive) return this.exited;
    this.signal('SIGTERM');
    const timer = setTimeout(() => this.signal('SIGKILL'), graceMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }
}
