// Running documentation code samples (test/docs-samples.test.ts, test/docs-operations.test.ts):
// each sample is a child process in its own process group (detached), stopped by that id, so that
// a pipeline or a server the sample started stops with it; TypeScript samples are type-checked
// with the project's own compiler settings before they run.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, waitFor } from './process.js';

export const SAMPLE_TIMEOUT_MS = 60_000;

export interface SampleExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

const running = new Set<SampleProcess>();

export class SampleProcess {
  stdout = '';
  stderr = '';
  exit: SampleExit | null = null;
  readonly exited: Promise<void>;
  private readonly child: ChildProcess;

  constructor(
    readonly label: string,
    command: string,
    args: string[],
    opts: { cwd: string; env: NodeJS.ProcessEnv },
  ) {
    this.child = spawn(command, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    this.child.stdout?.on('data', (c: Buffer) => (this.stdout += c.toString()));
    this.child.stderr?.on('data', (c: Buffer) => (this.stderr += c.toString()));
    this.exited = new Promise((resolve) => {
      const ended = (exit: SampleExit) => {
        this.exit ??= exit;
        running.delete(this);
        resolve();
      };
      this.child.once('error', (e) => {
        this.stderr += `\nspawn error: ${e.message}`;
        ended({ code: null, signal: null });
      });
      this.child.once('close', (code, signal) => ended({ code, signal }));
    });
    running.add(this);
  }

  /** The processes that have not exited yet: what a test file's `after` stops. */
  static running(): SampleProcess[] {
    return [...running];
  }

  get report(): string {
    return `\n--- stdout of ${this.label}:\n${this.stdout}\n--- stderr:\n${this.stderr}`;
  }

  private signal(signal: NodeJS.Signals): void {
    if (this.exit || !this.child.pid) return;
    try {
      process.kill(-this.child.pid, signal);
    } catch {
      // already gone
    }
  }

  /** SIGTERM, and SIGKILL if the process is still there after graceMs. */
  async stop(graceMs = 20_000): Promise<void> {
    this.signal('SIGTERM');
    const stopped = await Promise.race([this.exited.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), graceMs).unref())]);
    if (!stopped) await this.kill();
  }

  async kill(): Promise<void> {
    this.signal('SIGKILL');
    await this.exited;
  }

  /** Waits until `done` holds of the output; fails if the process exits first. */
  until(what: string, done: () => boolean): Promise<unknown> {
    return waitFor(
      `${this.label} ${what}`,
      () => {
        if (done()) return true;
        if (this.exit) throw new Error(`it exited (${JSON.stringify(this.exit)}) first${this.report}`);
        return false;
      },
      SAMPLE_TIMEOUT_MS,
    );
  }

  /** Waits for the process to exit; kills it and fails at the deadline. */
  async finish(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = await Promise.race([this.exited.then(() => false), new Promise<true>((r) => (timer = setTimeout(() => r(true), SAMPLE_TIMEOUT_MS)))]);
    clearTimeout(timer);
    if (late) await this.kill();
    assert.ok(!late, `${this.label} did not finish within ${SAMPLE_TIMEOUT_MS} ms${this.report}`);
  }
}

/**
 * Type-checks TypeScript programs with the project's compiler settings (strict) and returns the
 * diagnostics about them, named by program; the SDK's own sources are judged by its package, not
 * here. `prefix` names the scratch directory, which lives inside the checkout so that the programs
 * resolve @toolrun/sdk as the repository maps it.
 */
export function typecheck(programs: Record<string, string>, opts: { prefix: string; timeoutMs: number }): { diagnostics: string[]; all: string } {
  const dir = fs.mkdtempSync(path.join(ROOT, '.test-data', opts.prefix));
  try {
    const files = Object.entries(programs).map(([name, code]) => {
      const file = path.join(dir, `${name}.ts`);
      fs.writeFileSync(file, `${code}\nexport {};\n`);
      return file;
    });
    const tsconfig = path.join(dir, 'tsconfig.json');
    fs.writeFileSync(tsconfig, JSON.stringify({ extends: path.join(ROOT, 'tsconfig.json'), compilerOptions: { noEmit: true }, include: [], files }));
    const tsc = spawnSync(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', tsconfig, '--pretty', 'false'], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: opts.timeoutMs,
    });
    const all = `${tsc.stdout ?? ''}${tsc.stderr ?? ''}`;
    assert.ok(tsc.status === 0 || all.trim().length > 0, `tsc failed without a diagnostic (status ${tsc.status}, ${tsc.error?.message ?? ''})`);
    const rel = path.relative(ROOT, dir);
    const diagnostics = all.split('\n').filter((l) => l.startsWith(dir) || l.startsWith(rel));
    return { diagnostics: diagnostics.map((l) => l.replace(`${dir}${path.sep}`, '').replace(`${rel}${path.sep}`, '')), all };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
