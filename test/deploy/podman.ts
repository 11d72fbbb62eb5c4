// Running podman, podman-compose and the host's own tools from the deploy test, with the
// containers.conf this machine needs (runc and cgroupfs: see test/deploy/containers.conf).
import { AsyncLocalStorage } from 'node:async_hooks';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const CONTAINERS_CONF = path.join(ROOT, 'test', 'deploy', 'containers.conf');

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface CommandOptions {
  cwd?: string;
  env?: Record<string, string>;
  input?: string;
  timeoutMs?: number;
  /** Print the output as it comes (long builds), besides collecting it. */
  echo?: boolean;
}

export class CommandError extends Error {
  constructor(
    readonly command: string,
    readonly result: CommandResult,
  ) {
    const tail = (result.stderr || result.stdout).trim().split('\n').slice(-15).join('\n');
    super(`${command} exited ${result.code}\n${tail}`);
    this.name = 'CommandError';
  }
}

// Once the test is being stopped (a signal, a failure), the commands under way are killed and no
// new one starts, except the clean-up's own: nothing can be made after the clean-up looked.
const running = new Set<ChildProcess>();
const cleanupScope = new AsyncLocalStorage<true>();
let stopping = false;

/**
 * Stops the test's commands: those under way get SIGTERM, then SIGKILL after 10 s (podman then
 * removes what it can itself); new ones are refused outside `asCleanup`.
 */
export async function stopCommands(): Promise<void> {
  stopping = true;
  const children = [...running];
  for (const child of children) child.kill('SIGTERM');
  const deadline = Date.now() + 10_000;
  while (children.some((c) => running.has(c)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  for (const child of children) if (running.has(child)) child.kill('SIGKILL');
}

/** Runs fn with commands allowed while stopping. */
export function asCleanup<T>(fn: () => Promise<T>): Promise<T> {
  return cleanupScope.run(true, fn);
}

/** Runs a program (no shell) and collects what it says; never throws on a non-zero exit. */
export function exec(file: string, args: string[], opts: CommandOptions = {}): Promise<CommandResult> {
  if (stopping && !cleanupScope.getStore()) return Promise.reject(new Error(`stopping: ${file} ${args.join(' ')} not started`));
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      cwd: opts.cwd ?? ROOT,
      env: { ...process.env, CONTAINERS_CONF, ...opts.env },
      stdio: [opts.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout?.on('data', (c: Buffer) => {
      out.push(c);
      if (opts.echo) process.stderr.write(c);
    });
    child.stderr?.on('data', (c: Buffer) => {
      err.push(c);
      if (opts.echo) process.stderr.write(c);
    });
    const timer = opts.timeoutMs
      ? setTimeout(() => {
          child.kill('SIGKILL');
        }, opts.timeoutMs)
      : null;
    running.add(child);
    child.on('error', (err) => {
      running.delete(child);
      reject(err);
    });
    child.on('close', (code, signal) => {
      running.delete(child);
      if (timer) clearTimeout(timer);
      resolve({ code: code ?? (signal ? 128 : 1), stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') });
    });
    if (child.stdin) {
      // A program that exits without reading its input must not fail us.
      child.stdin.on('error', () => undefined);
      child.stdin.end(opts.input);
    }
  });
}

/** exec, throwing a CommandError (with the end of the output) unless it exits 0; resolves with stdout. */
export async function run(file: string, args: string[], opts: CommandOptions = {}): Promise<string> {
  const result = await exec(file, args, opts);
  if (result.code !== 0) throw new CommandError(`${file} ${args.join(' ')}`, result);
  return result.stdout;
}

export const podman = (args: string[], opts: CommandOptions = {}) => run('podman', args, opts);

/** podman's JSON output (ps, inspect, network ls ...), parsed. */
export async function podmanJson<T>(args: string[]): Promise<T> {
  return JSON.parse((await podman(args)) || 'null') as T;
}

/** Whether a podman object (image, container, network, volume, pod) exists. */
export async function podmanExists(kind: 'image' | 'container' | 'network' | 'volume' | 'pod', name: string): Promise<boolean> {
  return (await exec('podman', [kind, 'exists', name])).code === 0;
}

/** Waits until check() returns a value (not undefined), polling; throws naming what was awaited. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined>, timeoutMs: number, everyMs = 500): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown = null;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${last instanceof Error ? last.message : String(last)})` : ''}`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** A one-line progress note on stderr, with the seconds since the test began. */
const began = Date.now();
export function note(message: string): void {
  process.stderr.write(`# deploy ${((Date.now() - began) / 1000).toFixed(1).padStart(6)} s  ${message}\n`);
}
