import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import type { OutboundResponse } from '../../../net/outbound.js';
import { MemoryCgroup } from './cgroup.js';
import { MAX_LOG_MESSAGES, RenderError, type RenderedPage, type RenderLimits } from './limits.js';
import { checkFromChild, type ChildResult, type ToChild } from './protocol.js';
import { ProcessTree } from './tree.js';

const MB = 1024 * 1024;
/** How often the watchdog looks at the tree. */
const WATCH_MS = 200;
/** With a cgroup, the watchdog is a second line: it sums memory some pages of which the cgroup counts once. */
const SECOND_LINE = 1.5;

export interface IsolatedRenderOptions {
  executablePath: string;
  allowPrivate: boolean;
  /** Tests only: these addresses count as allowed, and only these. */
  allowAddresses?: string[] | undefined;
  signal: AbortSignal;
  limits: RenderLimits;
  /** The run's work directory: the render gets a directory of its own in it, removed after the render. */
  workDir: string;
  logger: Pick<Logger, 'warn' | 'debug'>;
}

/** The child's module: the TypeScript source through tsx when this file runs from the sources, else the compiled one beside it. */
function childModule(): { file: string; execArgv: string[] } {
  const here = fileURLToPath(import.meta.url);
  if (here.endsWith('.ts')) return { file: path.join(path.dirname(here), 'render-child.ts'), execArgv: ['--import', import.meta.resolve('tsx')] };
  return { file: path.join(path.dirname(here), 'render-child.js'), execArgv: [] };
}

/**
 * The browser's own directory (its HOME and TMPDIR), under the system's temporary directory and
 * short: Chromium puts its singleton socket in TMPDIR, and a Unix socket's path is at most 107
 * bytes (a run's work directory, with the run id in its name, is too long for it).
 */
async function browserDir(): Promise<string> {
  const base = os.tmpdir().length <= 40 ? os.tmpdir() : '/tmp';
  return fs.mkdtemp(path.join(base, 'toolrun-render-'));
}

/**
 * What the child and the browser inherit: the service's secrets stay out; HOME and TMPDIR are the
 * browser's own directory, so Chromium's profile, caches and crash database are in it (removed
 * with it, and named on their command lines: tree.ts finds them by it).
 */
function childEnv(dir: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { HOME: path.join(dir, 'home'), TMPDIR: path.join(dir, 'tmp') };
  for (const name of ['PATH', 'LANG', 'LC_ALL', 'LC_CTYPE', 'TZ', 'FONTCONFIG_PATH', 'FONTCONFIG_FILE']) if (process.env[name] !== undefined) env[name] = process.env[name];
  return env;
}

/**
 * Renders a page in a child process of its own (render-child.ts drives Chromium and runs the
 * proxy there) and returns what it read. Whatever the page does, the service holds at most the
 * rendered DOM (htmlBytes), the kept resources (maxKeptBytes) and a few small checked messages;
 * the child's own heap is bounded (controllerHeapMb), and the child with every Chromium process
 * is bounded in memory (memoryMb: a cgroup where one can be made, and the watchdog) and in time
 * (budgetMs, then closeGraceMs to close, then everything is killed). A render that crosses a
 * bound, or whose child dies, fails with a RenderError saying why; nothing of it outlives it.
 */
export async function renderIsolated(url: string, opts: IsolatedRenderOptions): Promise<RenderedPage> {
  if (opts.signal.aborted) throw new RenderError('cancelled');
  // What the child hands back (the DOM, kept resources) goes in the run's work directory.
  const dir = await fs.mkdtemp(path.join(opts.workDir, 'render-'));
  const home = await browserDir().catch(() => null);
  let cgroup = opts.limits.cgroup ? MemoryCgroup.create(opts.limits.memoryMb * MB) : null;
  let unused: MemoryCgroup | null = null;
  let session: Session | null = null;
  try {
    if (!home) throw new RenderError('no temporary directory for the browser');
    await Promise.all([fs.mkdir(path.join(home, 'home')), fs.mkdir(path.join(home, 'tmp'))]);
    const entry = childModule();
    const child = fork(entry.file, [], {
      execArgv: [...entry.execArgv, `--max-old-space-size=${opts.limits.controllerHeapMb}`],
      env: childEnv(home),
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      serialization: 'json',
    });
    // At once, so the child's own start (its modules) is counted too; it launches nothing before
    // it is told to. Synchronously with the fork, as is the session, whose handlers must be on
    // the child before its first event (an unhandled 'error' would end the service).
    try {
      if (cgroup) cgroup.adopt(child.pid ?? -1);
    } catch {
      opts.logger.warn({ cgroup: cgroup?.dir }, 'brand_kit_extract: the render process could not be put in its memory cgroup; the watchdog bounds it');
      unused = cgroup;
      cgroup = null;
    }
    session = new Session(child, dir, home, cgroup, opts);
    const result = await session.outcome(url);
    return await readFiles(dir, result, opts.limits, session.memory());
  } finally {
    await session?.stop();
    if (session) opts.logger.debug({ render_ms: session.timings }, 'brand_kit_extract: render process ended');
    await unused?.remove();
    if (cgroup && !(await cgroup.remove())) opts.logger.warn({ cgroup: cgroup.dir }, 'brand_kit_extract: the render cgroup could not be removed');
    await Promise.all([dir, home].map((d) => (d ? fs.rm(d, { recursive: true, force: true }).catch(() => {}) : null)));
  }
}

/** One child process and its tree, from the fork to the last process killed. */
class Session {
  private readonly tree: ProcessTree;
  private stderr = '';
  private failure: string | null = null;
  private peakResident = 0;
  private readonly limitBytes: number;
  private readonly exited: Promise<void>;
  private settle: ((outcome: { result: ChildResult } | { error: string }) => void) | null = null;
  /** Milliseconds from the fork: the child ready, the page read, every process gone. */
  readonly timings: { ready?: number; read?: number; ended?: number } = {};
  private readonly forked = Date.now();

  constructor(
    private readonly child: ChildProcess,
    /** Where the child writes what it hands back. */
    private readonly dir: string,
    /** The browser's HOME and TMPDIR. */
    home: string,
    private readonly cgroup: MemoryCgroup | null,
    private readonly opts: IsolatedRenderOptions,
  ) {
    this.tree = new ProcessTree(child.pid ?? -1, home);
    this.limitBytes = opts.limits.memoryMb * MB;
    this.exited = new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve();
      child.once('exit', () => resolve());
    });
    // Chromium inherits the child's niceness: a render cannot take the CPU from the API.
    try {
      if (child.pid) os.setPriority(child.pid, 10);
    } catch {
      // not allowed here: the render runs at the service's priority
    }
    child.stderr?.on('data', (c: Buffer) => (this.stderr = (this.stderr + c.toString('utf8')).slice(-2048)));
    child.on('error', () => this.fail('the render process could not start'));
  }

  /** The render's peak memory, by the cgroup's count where there is one. */
  memory(): RenderedPage['memory'] {
    const counted = this.cgroup?.peak();
    return { bound: this.cgroup?.name ?? 'watchdog', peakBytes: counted ?? this.peakResident };
  }

  /** Sends the job once the child is ready (and in its cgroup) and waits for its answer, within every bound. */
  async outcome(url: string): Promise<ChildResult> {
    const { limits, signal } = this.opts;
    const deadline = Date.now() + limits.budgetMs;
    const answer = new Promise<{ result: ChildResult } | { error: string }>((resolve) => (this.settle = resolve));
    let logged = 0;
    this.child.on('message', (raw: unknown) => {
      const m = checkFromChild(raw);
      if (!m) return this.fail('the render process sent a malformed message');
      if (m.type === 'log') {
        if (logged++ < MAX_LOG_MESSAGES) this.opts.logger.warn({ ...m.fields, via: 'render_proxy' }, m.msg);
      } else if (m.type === 'ready') {
        this.timings.ready = Date.now() - this.forked;
        const job: ToChild = { type: 'render', job: { url, executablePath: this.opts.executablePath, allowPrivate: this.opts.allowPrivate, allowAddresses: this.opts.allowAddresses ?? null, limits, deadline, dir: this.dir } };
        this.child.send(job);
      } else if (m.type === 'done') {
        this.timings.read = Date.now() - this.forked;
        this.settle?.({ result: m.result });
      } else {
        this.settle?.({ error: this.memoryFailure() ?? m.message });
      }
    });
    void this.exited.then(() => this.fail(this.memoryFailure() ?? this.deathCause()));
    const onAbort = () => this.fail('cancelled');
    signal.addEventListener('abort', onAbort, { once: true });
    if (signal.aborted) onAbort();
    const overdue = setTimeout(() => this.fail(`the render took longer than ${limits.budgetMs} ms`), limits.budgetMs + limits.closeGraceMs);
    const watchdog = setInterval(() => this.watch(), WATCH_MS);
    try {
      const outcome = await answer;
      if ('error' in outcome) throw new RenderError(outcome.error);
      return outcome.result;
    } finally {
      signal.removeEventListener('abort', onAbort);
      clearTimeout(overdue);
      clearInterval(watchdog);
    }
  }

  /** Ends the render with a reason (the first one given), killing its processes. */
  private fail(why: string): void {
    this.failure ??= why;
    this.settle?.({ error: this.failure });
    this.settle = null;
    void this.killNow();
  }

  private watch(): void {
    const resident = this.tree.sample();
    this.peakResident = Math.max(this.peakResident, resident);
    const bound = this.cgroup ? this.limitBytes * SECOND_LINE : this.limitBytes;
    if (this.cgroup && this.cgroup.oomKills() > 0) this.overMemory('cgroup');
    else if (resident > bound) this.overMemory('watchdog');
  }

  private tooMuch(): string {
    return `the page needed more than ${this.opts.limits.memoryMb} MB of memory`;
  }

  /** The tree crossed its bound: the cgroup's OOM killer acted in it, or the watchdog saw it over. */
  private overMemory(by: 'cgroup' | 'watchdog'): void {
    if (this.failure === null) {
      const { bound, peakBytes } = this.memory();
      this.opts.logger.warn({ render_memory_bound: bound, over_by: by, limit_mb: this.opts.limits.memoryMb, peak_bytes: peakBytes }, 'brand_kit_extract: the render crossed its memory bound');
    }
    this.fail(this.tooMuch());
  }

  /** The memory failure, when the render ended over its bound (the cgroup's OOM killer may have acted since the last look). */
  private memoryFailure(): string | null {
    if (this.cgroup && this.cgroup.oomKills() > 0) this.overMemory('cgroup');
    return this.failure === this.tooMuch() ? this.failure : null;
  }

  private deathCause(): string {
    const { exitCode, signalCode } = this.child;
    if (/heap out of memory|Reached heap limit|ERR_STRING_TOO_LONG|Invalid string length/.test(this.stderr)) {
      return `the render process ended: the page pushed more through the browser than its ${this.opts.limits.controllerHeapMb} MB heap holds`;
    }
    return `the render process ended (${signalCode ?? `exit code ${exitCode}`})`;
  }

  private async killNow(): Promise<void> {
    await this.cgroup?.killAll(500);
    this.tree.killAll();
  }

  /** Waits a short while for the child to close the browser and exit, then kills whatever of the render still runs. */
  async stop(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.exited, new Promise<void>((resolve) => (timer = setTimeout(resolve, this.opts.limits.closeGraceMs)))]);
    clearTimeout(timer);
    this.failure ??= 'the render is over';
    const until = Date.now() + 3000;
    do {
      await this.killNow();
      if (!this.tree.running().length && (this.child.exitCode !== null || this.child.signalCode !== null)) {
        this.timings.ended = Date.now() - this.forked;
        return;
      }
      await new Promise((r) => setTimeout(r, 40));
    } while (Date.now() < until);
    this.opts.logger.warn({ pids: this.tree.running() }, 'brand_kit_extract: render processes still running after being killed');
  }
}

/** The child's files, checked against what it said and against the bounds before they are read. */
async function readFiles(dir: string, result: ChildResult, limits: RenderLimits, memory: RenderedPage['memory']): Promise<RenderedPage> {
  const sized = async (file: string, bytes: number): Promise<Buffer> => {
    const full = path.join(dir, file);
    const stat = await fs.stat(full);
    if (stat.size !== bytes) throw new RenderError('the render process handed back a file of another size than it said');
    return fs.readFile(full);
  };
  if (result.htmlBytes > limits.htmlBytes) throw new RenderError('the render process handed back a page over its bound');
  const html = (await sized(result.htmlFile, result.htmlBytes)).toString('utf8');
  const resources = new Map<string, OutboundResponse>();
  let kept = 0;
  for (const k of result.kept) {
    if (kept + k.bytes > limits.maxKeptBytes || resources.has(k.url)) continue;
    kept += k.bytes;
    const headers = k.contentType ? { 'content-type': k.contentType } : {};
    resources.set(k.url, { status: k.status, headers, body: await sized(k.file, k.bytes), url: k.url, address: '' });
  }
  return { finalUrl: result.finalUrl, html, truncated: result.truncated, computed: result.computed, resources, stats: result.stats, memory };
}
