// Spawns test/helpers/worker-process.ts as real child processes sharing a test server's database
// and storage root, and kills them (by pid) when a test ends, however it ends.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestServer } from './server.js';
import { parseLogLines, waitFor, type LogLine } from './runs-harness.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const SCRIPT = path.join(ROOT, 'test', 'helpers', 'worker-process.ts');

const live = new Set<WorkerProcess>();
// Last resort if the test process ends without its after hooks: no worker outlives it.
process.once('exit', () => {
  for (const w of live) w.signal('SIGKILL');
});

export class WorkerProcess {
  readonly child: ChildProcess;
  stdout = '';
  stderr = '';
  /** The worker's id ("host:pid:..."), known once it reported ready. */
  workerId = '';
  private exitInfo: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  private constructor(env: NodeJS.ProcessEnv) {
    this.child = spawn(process.execPath, ['--import', 'tsx', SCRIPT], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout?.on('data', (c: Buffer) => (this.stdout += c.toString()));
    this.child.stderr?.on('data', (c: Buffer) => (this.stderr += c.toString()));
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => {
        this.exitInfo = { code, signal };
        live.delete(this);
        resolve(this.exitInfo);
      });
    });
    live.add(this);
  }

  /** Starts a worker process against the server's database and data directory; resolves when it listens. */
  static async spawn(s: TestServer, env: Record<string, string> = {}): Promise<WorkerProcess> {
    const base: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) {
      if (/^(TOOLRUN_|TEST_|AWS_)/.test(k) || ['DATABASE_URL', 'NODE_TEST_CONTEXT', 'NODE_OPTIONS', 'LOG_LEVEL', 'PORT', 'HOST'].includes(k)) continue;
      base[k] = v;
    }
    const w = new WorkerProcess({
      ...base,
      TOOLRUN_ENV: 'test',
      DATABASE_URL: s.database.url,
      TOOLRUN_DATA_DIR: s.config.dataDir,
      PUBLIC_BASE_URL: s.url,
      TOOLRUN_LEASE_SECONDS: String(s.config.runs.leaseSeconds),
      TOOLRUN_WORKER_POLL_MS: String(s.config.runs.pollMs),
      TOOLRUN_WORKER_CONCURRENCY: '1',
      LOG_LEVEL: 'info',
      TEST_PARENT_PID: String(process.pid),
      ...(process.env.TEST_LOG_DIR ? { TEST_LOG_DIR: process.env.TEST_LOG_DIR } : {}),
      ...env,
    });
    try {
      const ready = await waitFor(
        'worker process to report ready',
        async () => {
          if (w.exitInfo) throw new Error(`worker process exited early (${JSON.stringify(w.exitInfo)}): ${w.stderr}`);
          const line = w.stdout.split('\n').find((l) => l.includes('"event":"ready"'));
          return line ? (JSON.parse(line) as { worker: string }) : undefined;
        },
        30_000,
        50,
      );
      w.workerId = ready.worker;
      return w;
    } catch (err) {
      w.signal('SIGKILL');
      await w.exited;
      throw err;
    }
  }

  get pid(): number {
    if (!this.child.pid) throw new Error('no pid');
    return this.child.pid;
  }

  get alive(): boolean {
    return this.exitInfo === null;
  }

  /** True when a lease token is one of this process's (tokens are "<worker id>/<claim number>"). */
  holds(leaseOwner: string | null): boolean {
    return leaseOwner !== null && this.workerId !== '' && leaseOwner.startsWith(`${this.workerId}/`);
  }

  signal(sig: NodeJS.Signals): void {
    if (!this.alive) return;
    try {
      process.kill(this.pid, sig);
    } catch (err) {
      // Died a moment ago; its exit event is on the way.
      if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
    }
  }

  async kill9(): Promise<void> {
    this.signal('SIGKILL');
    const exit = await this.exited;
    if (exit.signal !== 'SIGKILL') throw new Error(`worker exited with ${JSON.stringify(exit)} instead of dying by SIGKILL`);
  }

  /** The JSON log lines the worker wrote on stderr. */
  logs(): LogLine[] {
    return parseLogLines(this.stderr);
  }
}

/** SIGKILLs (by pid) every worker process still alive; for after hooks. Stopped ones die too. */
export async function killWorkerProcesses(): Promise<void> {
  const all = [...live];
  for (const w of all) w.signal('SIGKILL');
  await Promise.all(all.map((w) => w.exited));
}
