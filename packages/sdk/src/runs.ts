import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { ToolrunError, errorFromResponse } from './errors.ts';
import { fetchOnce, queryString, sleep, type Transport } from './http.ts';
import { extensionFor } from './mime.ts';
import { readEventStream, type StreamOptions } from './sse.ts';
import { isFinal, type ListRunsQuery, type OutputUrl, type Run, type RunBody, type RunList, type RunOutput } from './types.ts';

export type RunRef = string | Pick<Run, 'id'>;

const idOf = (run: RunRef) => encodeURIComponent(typeof run === 'string' ? run : run.id);

export interface StartOptions {
  /** Sent as Idempotency-Key (at most 255 characters); a random UUID when omitted. */
  idempotencyKey?: string;
  /** Sent as Cancel-After: the service cancels the run if it is not final this long after its start (90, 1h30m, 10m, 45s; at most 24h). */
  cancelAfter?: string | number;
  signal?: AbortSignal;
}

export interface WaitOptions {
  signal?: AbortSignal;
  /** Called with the run after every poll (and once at the start with what is known). */
  onProgress?: (run: Run) => void;
  /** Between polls: 2000 to 5000 ms (default 2000, growing towards 5000 on long runs). */
  intervalMs?: number;
  /** Give up (a ToolrunError with code `wait_timeout`) after this long; no limit by default. */
  timeoutMs?: number;
}

/** One event of a run's stream: `status` and `progress` while it works, then `done` with the final run. */
export interface RunEvent {
  /** The run's change number (what Last-Event-ID resumes after). */
  id: string;
  event: 'status' | 'progress' | 'done' | (string & {});
  /** The run as GET /v1/runs/{id} showed it at that moment. */
  run: Run;
}

export interface DownloadOptions {
  signal?: AbortSignal;
  /** How long to keep asking while an output answers 409 output_not_ready (default 120 s). */
  readyTimeoutMs?: number;
  /** Called when each output has been written. */
  onOutput?: (output: DownloadedOutput) => void;
  /** Time limit of one output's download in ms (default 3600000: outputs may be large videos). */
  timeoutMs?: number;
}

export interface DownloadedOutput {
  asset_id: string;
  path: string;
  size_bytes: number;
  mime_type: string | null;
}

export interface RunsOptions {
  /** Smallest (and, when under 2000, default) poll interval of wait(); 2000 except through the client's `testing` option. */
  minPollIntervalMs: number;
}

const MAX_POLL_MS = 5000;

/** A safe file name for an output: the base name it suggests, or the asset id plus an extension. */
function outputFileName(output: RunOutput, taken: Set<string>): string {
  const suggested = path.basename(output.file_name ?? '').replace(/[\u0000-\u001f/\\:*?"<>|]/g, '_');
  let name = suggested && suggested !== '.' && suggested !== '..' ? suggested : `${output.asset_id}${extensionFor(output.mime_type)}`;
  const ext = path.extname(name);
  for (let n = 2; taken.has(name); n++) name = `${path.basename(name, ext).replace(/-\d+$/, '')}-${n}${ext}`;
  taken.add(name);
  return name;
}

export class Runs {
  constructor(
    private readonly http: Transport,
    private readonly opts: RunsOptions,
  ) {}

  /** Starts a run (202, status queued). Retried safely: the same Idempotency-Key goes with every attempt. */
  start(toolId: string, body: RunBody = {}, opts: StartOptions = {}): Promise<Run> {
    const key = opts.idempotencyKey ?? randomUUID();
    return this.http.request<Run>('POST', `/v1/tools/${encodeURIComponent(toolId)}/runs`, {
      body,
      headers: { 'idempotency-key': key, ...(opts.cancelAfter !== undefined ? { 'cancel-after': String(opts.cancelAfter) } : {}) },
      retry: 'idempotent',
      signal: opts.signal,
    });
  }

  /** One page of the team's API runs, newest first; pass the last id as `starting_after` while `has_more`. */
  list(query: ListRunsQuery = {}, opts: { signal?: AbortSignal } = {}): Promise<RunList> {
    return this.http.request<RunList>('GET', `/v1/runs${queryString(query)}`, { retry: 'idempotent', signal: opts.signal });
  }

  /** Every run matching the filters, newest first, fetching page after page as they are read. */
  async *all(query: Omit<ListRunsQuery, 'starting_after'> = {}, opts: { signal?: AbortSignal } = {}): AsyncGenerator<Run> {
    let after: string | undefined;
    for (;;) {
      const page = await this.list({ ...query, ...(after ? { starting_after: after } : {}) }, opts);
      yield* page.data;
      const last = page.data[page.data.length - 1];
      if (!page.has_more || !last) return;
      after = last.id;
    }
  }

  /**
   * The run as it is now; with `waitSeconds` (1 to 60) the service holds the answer until the run
   * is final or that long has passed (Prefer: wait). Kept 5 s under the client's request timeout.
   */
  get(run: RunRef, opts: { signal?: AbortSignal; waitSeconds?: number } = {}): Promise<Run> {
    const limit = Math.floor(this.http.opts.timeoutMs / 1000) - 5;
    const wait = opts.waitSeconds === undefined ? 0 : Math.min(60, limit, Math.floor(opts.waitSeconds));
    return this.http.request<Run>('GET', `/v1/runs/${idOf(run)}`, {
      retry: 'idempotent',
      signal: opts.signal,
      ...(wait >= 1 ? { headers: { prefer: `wait=${wait}` } } : {}),
    });
  }

  /** Cancels a queued or running run; its hold is released. */
  cancel(run: RunRef, opts: { signal?: AbortSignal } = {}): Promise<Run> {
    return this.http.request<Run>('POST', `/v1/runs/${idOf(run)}/cancel`, { retry: 'refused-only', signal: opts.signal });
  }

  /** A short-lived signed URL for one output of a succeeded run (fetch it straight away). */
  outputUrl(run: RunRef, assetId: string, opts: { signal?: AbortSignal } = {}): Promise<OutputUrl> {
    return this.http.request<OutputUrl>('GET', `/v1/runs/${idOf(run)}/outputs/${encodeURIComponent(assetId)}/url`, {
      retry: 'idempotent',
      signal: opts.signal,
    });
  }

  /**
   * The run's changes as they happen (GET /v1/runs/{id}/events, server-sent events, no polling):
   * `status` first, `progress` as it moves, and `done` with the final run, after which the loop
   * ends. A dropped connection is made again with Last-Event-ID, so nothing is seen twice.
   */
  async *events(run: RunRef, opts: StreamOptions = {}): AsyncGenerator<RunEvent> {
    const path = `/v1/runs/${idOf(run)}/events`;
    for await (const m of readEventStream(this.http, path, { ...opts, isLast: (e) => e.event === 'done' })) {
      if (m.id === null) continue;
      yield { id: m.id, event: m.event, run: JSON.parse(m.data) as Run };
    }
  }

  /**
   * Polls until the run is succeeded, failed or canceled and resolves with it (a failed run
   * resolves too: look at `status` and `error`). A 429 is waited out using Retry-After.
   */
  async wait(run: RunRef | Run, opts: WaitOptions = {}): Promise<Run> {
    const floor = this.opts.minPollIntervalMs;
    const first = Math.min(MAX_POLL_MS, Math.max(floor, opts.intervalMs ?? Math.min(floor, 2000)));
    // Grows towards 5 s on long runs; an interval under 2 s (tests only) stays as it is.
    const ceiling = first < 2000 ? first : MAX_POLL_MS;
    const deadline = opts.timeoutMs === undefined ? Infinity : Date.now() + opts.timeoutMs;
    let interval = first;
    let delay = 0;
    if (typeof run === 'object' && 'status' in run) {
      opts.onProgress?.(run);
      if (isFinal(run)) return run;
      delay = interval;
    }
    for (;;) {
      if (delay > 0) await sleep(Math.min(delay, Math.max(0, deadline - Date.now())), opts.signal);
      if (Date.now() >= deadline) {
        throw new ToolrunError({ status: 0, code: 'wait_timeout', message: `Run ${idOf(run)} was not final after ${opts.timeoutMs} ms` });
      }
      let current: Run;
      try {
        current = await this.get(run, { signal: opts.signal });
      } catch (err) {
        // Retries inside get() give up on a long Retry-After; waiting it out is the polite answer.
        if (err instanceof ToolrunError && err.status === 429) {
          delay = Math.max(interval, (err.retryAfterSeconds ?? 1) * 1000);
          continue;
        }
        throw err;
      }
      opts.onProgress?.(current);
      if (isFinal(current)) return current;
      delay = interval;
      interval = Math.min(ceiling, Math.round(interval * 1.15));
    }
  }

  /**
   * Downloads every output of a succeeded run into dir (created if needed), each through a fresh
   * signed URL; 409 output_not_ready is asked again until readyTimeoutMs, and a URL refused by
   * storage (expired) is replaced by a new one. Resolves with where each output went.
   */
  async download(run: RunRef | Run, dir: string, opts: DownloadOptions = {}): Promise<DownloadedOutput[]> {
    const resolved = typeof run === 'object' && 'status' in run ? run : await this.get(run, { signal: opts.signal });
    if (resolved.status !== 'succeeded') {
      throw new ToolrunError({
        status: 0,
        code: 'run_not_succeeded',
        message: `Run ${resolved.id} is ${resolved.status}; only a succeeded run has outputs to download`,
        details: { run_id: resolved.id, status: resolved.status },
      });
    }
    await fs.mkdir(dir, { recursive: true });
    const taken = new Set<string>();
    const done: DownloadedOutput[] = [];
    for (const output of resolved.outputs) {
      const target = path.join(dir, outputFileName(output, taken));
      const size = await this.downloadOne(resolved.id, output.asset_id, target, opts);
      const item = { asset_id: output.asset_id, path: target, size_bytes: size, mime_type: output.mime_type ?? null };
      opts.onOutput?.(item);
      done.push(item);
    }
    return done;
  }

  private async downloadOne(runId: string, assetId: string, target: string, opts: DownloadOptions): Promise<number> {
    const readyDeadline = Date.now() + (opts.readyTimeoutMs ?? 120_000);
    let notReadyWaits = 0;
    let refusedUrls = 0;
    for (;;) {
      let signed: OutputUrl;
      try {
        signed = await this.outputUrl(runId, assetId, { signal: opts.signal });
      } catch (err) {
        if (err instanceof ToolrunError && err.code === 'output_not_ready' && Date.now() < readyDeadline) {
          const backoff = Math.min(2000, 250 * 2 ** notReadyWaits++);
          await sleep(err.retryAfterSeconds !== null ? err.retryAfterSeconds * 1000 : backoff, opts.signal);
          continue;
        }
        throw err;
      }
      const res = await fetchOnce(this.http.opts.fetch, signed.url, { method: 'GET' }, opts.timeoutMs ?? 3_600_000, opts.signal);
      if (!res.ok || !res.body) {
        const error = errorFromResponse(res.status, res.headers, await res.text());
        // An expired or refused URL: ask for a fresh one (a few times).
        if ((res.status === 403 || res.status === 404 || res.status >= 500) && refusedUrls++ < 3) continue;
        throw error;
      }
      const partial = `${target}.${randomUUID().slice(0, 8)}.part`;
      try {
        await pipeline(Readable.fromWeb(res.body as WebReadableStream<Uint8Array>), createWriteStream(partial), { signal: opts.signal });
        await fs.rename(partial, target);
      } catch (err) {
        await fs.rm(partial, { force: true });
        throw err;
      }
      return (await fs.stat(target)).size;
    }
  }
}
