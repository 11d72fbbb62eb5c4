// toolrun-cli (packages/cli) as a real child process: plainly (pipes, no terminal), or inside a
// pseudo-terminal made by util-linux `script`, where stdin and stdout are a TTY, the progress bars
// draw and Ctrl-C is typed as the byte 0x03. Children are killed by pid when a test ends early.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { cliEnv, ROOT, waitFor } from './process.js';

export const CLI_BIN = path.join(ROOT, 'packages', 'cli', 'bin', 'toolrun-cli.js');

const live = new Set<ChildProcess>();

export function killCliChildren(): void {
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

/** The environment of a CLI child: none of ours, plus the key, the base URL and fast polling. */
export function toolrunCliEnv(key: string | null, baseUrl: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return cliEnv({
    ...(key ? { TOOLRUN_API_KEY: key } : {}),
    TOOLRUN_BASE_URL: baseUrl,
    TOOLRUN_CLI_TEST_POLL_MS: '50',
    ...extra,
  });
}

/** A running CLI child whose output is collected. */
export class CliChild {
  stdout = '';
  stderr = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(readonly child: ChildProcess) {
    live.add(child);
    child.stdout?.on('data', (c: Buffer) => (this.stdout += c.toString()));
    child.stderr?.on('data', (c: Buffer) => (this.stderr += c.toString()));
    this.exited = new Promise((resolve) =>
      child.once('close', (code, signal) => {
        live.delete(child);
        resolve({ code, signal });
      }),
    );
  }

  get pid(): number {
    if (!this.child.pid) throw new Error('no pid');
    return this.child.pid;
  }

  /** Waits until stdout + stderr, without escape sequences and CRs, match; fails early if the child exits first. */
  async waitForOutput(re: RegExp, timeoutMs = 30_000): Promise<RegExpExecArray> {
    let done = false;
    void this.exited.then(() => (done = true));
    return waitFor(
      `${re} in the CLI's output`,
      () => {
        const m = re.exec(plain(this.stdout + this.stderr));
        if (m) return m;
        if (done) throw new Error(`the CLI exited before printing ${re}\nstdout: ${this.stdout}\nstderr: ${this.stderr}`);
        return null;
      },
      timeoutMs,
      25,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\nstdout: ${JSON.stringify(this.stdout.slice(-3000))}\nstderr: ${this.stderr}`);
    });
  }

  write(data: string): void {
    this.child.stdin?.write(data);
  }

  /** The exit code, within the deadline (killed otherwise). */
  async code(timeoutMs = 60_000): Promise<number | null> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        killCliChildren();
        reject(new Error(`the CLI did not exit within ${timeoutMs} ms\nstdout: ${this.stdout}\nstderr: ${this.stderr}`));
      }, timeoutMs);
    });
    try {
      return (await Promise.race([this.exited, timeout])).code;
    } finally {
      clearTimeout(timer);
    }
  }
}

/** `toolrun-cli <args>` with pipes: no TTY anywhere. */
export function startCli(args: string[], env: NodeJS.ProcessEnv, opts: { stdin?: 'ignore' | 'pipe'; cwd?: string } = {}): CliChild {
  return new CliChild(spawn(process.execPath, [CLI_BIN, ...args], { cwd: opts.cwd ?? ROOT, env, stdio: [opts.stdin ?? 'ignore', 'pipe', 'pipe'] }));
}

export async function runCliToEnd(args: string[], env: NodeJS.ProcessEnv, opts: { cwd?: string } = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = startCli(args, env, opts);
  const code = await child.code();
  return { code, stdout: child.stdout, stderr: child.stderr };
}

const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * `toolrun-cli <args>` in a pseudo-terminal: `script` gives the child a pty for stdin, stdout and
 * stderr (120 columns), copies what we write to its input, and returns its exit code (-e).
 * `via: 'npx'` starts it as a user of the repository would, `npx toolrun-cli` (the workspace's
 * bin, offline): npm then runs it through `sh -c` and relays signals, and its exit code is npm's.
 */
export function startCliInPty(args: string[], env: NodeJS.ProcessEnv, opts: { cwd?: string; via?: 'node' | 'npx' } = {}): CliChild {
  const launcher = opts.via === 'npx' ? [path.join(path.dirname(process.execPath), 'npx'), '--offline', 'toolrun-cli'] : [process.execPath, CLI_BIN];
  const command = `stty cols 120 rows 40; exec ${[...launcher, ...args].map(shellQuote).join(' ')}`;
  // A user's environment: the test runner's npm_* variables would tell npx it runs inside `npm test`.
  const childEnv: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(env)) if (!/^npm_/i.test(k)) childEnv[k] = v;
  const child = spawn('script', ['-q', '-e', '-c', command, '/dev/null'], {
    cwd: opts.cwd ?? ROOT,
    env: { ...childEnv, TERM: 'xterm-256color', SHELL: '/bin/sh' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  return new CliChild(child);
}

/** Text without ANSI escape sequences and carriage returns. */
export function plain(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\u001b(\[[0-9;?]*[A-Za-z]|[78])/g, '').replace(/\r/g, '');
}
