// What the CLI shows: plain lines on stdout, progress bars (cli-progress) on stderr when it is a
// terminal, or one JSON document on stdout with --json.
import cliProgress from 'cli-progress';
import { ToolrunError, type Run } from '@toolrun/sdk';
import { UsageError } from './inputs.ts';

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['kB', 'MB', 'GB', 'TB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

export interface UploadBar {
  update(uploadedBytes: number): void;
}

export interface DownloadBar {
  /** More bytes arrived. */
  bytes(n: number): void;
  /** A line for people, shown once the bar is done. */
  say(text: string): void;
  stop(): void;
}

export interface RunBar {
  update(run: Run): void;
  /** Stops drawing (for a prompt); resume() draws again. */
  pause(): void;
  resume(): void;
  stop(): void;
}

export class Ui {
  constructor(
    readonly json: boolean,
    private readonly out: NodeJS.WriteStream = process.stdout,
    private readonly err: NodeJS.WriteStream = process.stderr,
  ) {}

  /** Bars only for a person at a terminal. */
  get bars(): boolean {
    return !this.json && this.err.isTTY === true;
  }

  /** A line for people (nothing with --json). */
  line(text = ''): void {
    if (!this.json) this.out.write(`${text}\n`);
  }

  /** A note on stderr, in every mode. */
  note(text: string): void {
    this.err.write(`${text}\n`);
  }

  /** The one JSON document of --json. */
  result(value: unknown): void {
    if (this.json) this.out.write(`${JSON.stringify(value, null, 2)}\n`);
  }

  error(err: unknown): void {
    if (err instanceof ToolrunError) {
      if (this.json) {
        this.out.write(
          `${JSON.stringify({ error: { status: err.status, code: err.code, message: err.message, request_id: err.requestId, errors: err.errors, details: err.details } }, null, 2)}\n`,
        );
        return;
      }
      const where = [err.code, err.status ? `HTTP ${err.status}` : null, err.requestId ? `request ${err.requestId}` : null].filter(Boolean).join(', ');
      this.err.write(`Error: ${err.message} (${where})\n`);
      for (const e of err.errors ?? []) this.err.write(`  ${e.loc.join('.')}: ${e.message}${e.code ? ` (${e.code})` : ''}\n`);
      return;
    }
    const message = err instanceof Error ? err.message : String(err);
    const problems = err instanceof UsageError ? err.problems : [];
    if (this.json) {
      const code = err instanceof UsageError ? 'usage_error' : 'cli_error';
      this.out.write(`${JSON.stringify({ error: { code, message, ...(problems.length ? { problems } : {}) } }, null, 2)}\n`);
      return;
    }
    this.err.write(`Error: ${message}\n`);
    for (const p of problems) this.err.write(`  ${p}\n`);
  }

  /** One bar per file; stop() when every upload is done. */
  uploadBars(files: { label: string; size: number }[]): { bars: UploadBar[]; stop(): void } {
    if (!this.bars) {
      return {
        bars: files.map((f) => ({ update: (n: number) => (n === f.size ? this.line(`Uploaded ${f.label} (${formatBytes(f.size)})`) : undefined) })),
        stop: () => undefined,
      };
    }
    const width = Math.max(...files.map((f) => f.label.length));
    const multi = new cliProgress.MultiBar(
      { stream: this.err, format: '{label} [{bar}] {percentage}% | {done} of {size}', hideCursor: true, clearOnComplete: false, barsize: 30, fps: 20 },
      cliProgress.Presets.shades_classic,
    );
    const bars = files.map((f) => {
      const bar = multi.create(f.size, 0, { label: `Uploading ${f.label.padEnd(width)}`, done: formatBytes(0), size: formatBytes(f.size) });
      return { update: (n: number) => bar.update(n, { done: formatBytes(n) }) };
    });
    return { bars, stop: () => multi.stop() };
  }

  /**
   * One bar for the bytes of all a run's outputs (total 0 when their sizes are unknown: it then
   * grows with what arrives). Lines said while it draws wait until it stops, below it.
   */
  downloadBar(outputs: number, totalBytes: number): DownloadBar {
    if (!this.bars) return { bytes: () => undefined, say: (text) => this.line(text), stop: () => undefined };
    const bar = new cliProgress.SingleBar(
      { stream: this.err, format: '{label} [{bar}] {percentage}% | {done} of {size}', hideCursor: true, clearOnComplete: false, barsize: 30, fps: 20 },
      cliProgress.Presets.shades_classic,
    );
    let total = totalBytes;
    let done = 0;
    let stopped = false;
    const held: string[] = [];
    bar.start(Math.max(1, total), 0, { label: `Downloading ${outputs} output${outputs === 1 ? '' : 's'}`, done: formatBytes(0), size: formatBytes(total) });
    return {
      bytes: (n) => {
        done += n;
        if (done > total) {
          total = done;
          bar.setTotal(total);
        }
        bar.update(done, { done: formatBytes(done), size: formatBytes(total) });
      },
      say: (text) => (stopped ? this.line(text) : held.push(text)),
      stop: () => {
        if (stopped) return;
        stopped = true;
        bar.stop();
        for (const text of held) this.line(text);
      },
    };
  }

  /** The run's progress: a bar at a terminal, else a line whenever the status changes. */
  runBar(run: Run): RunBar {
    if (!this.bars) {
      let last = '';
      return {
        update: (r) => {
          if (r.status !== last) this.line(`Run ${r.id}: ${r.status}${r.status === 'running' ? ` ${Math.round(r.progress * 100)}%` : ''}`);
          last = r.status;
        },
        pause: () => undefined,
        resume: () => undefined,
        stop: () => undefined,
      };
    }
    const bar = new cliProgress.SingleBar(
      { stream: this.err, format: 'Run {id} [{bar}] {percentage}% | {status}', hideCursor: true, clearOnComplete: false, barsize: 30, fps: 10 },
      cliProgress.Presets.shades_classic,
    );
    let latest = run;
    let drawing = true;
    bar.start(100, Math.round(run.progress * 100), { id: run.id.slice(0, 8), status: run.status });
    return {
      update: (r) => {
        latest = r;
        if (drawing) bar.update(r.status === 'succeeded' ? 100 : Math.round(r.progress * 100), { status: r.status });
      },
      pause: () => {
        if (!drawing) return;
        drawing = false;
        bar.stop();
      },
      resume: () => {
        if (drawing) return;
        drawing = true;
        bar.start(100, Math.round(latest.progress * 100), { id: latest.id.slice(0, 8), status: latest.status });
      },
      stop: () => {
        if (drawing) bar.stop();
        drawing = false;
      },
    };
  }
}
