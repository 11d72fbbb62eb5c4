import { Events } from './events.ts';
import { Files } from './files.ts';
import { Transport, type RetryInfo } from './http.ts';
import { runTool, type RunOptions, type RunResult } from './run-one.ts';
import { Runs } from './runs.ts';
import type { Estimate, EstimateBody, Me, ToolList } from './types.ts';
import { WebhookEndpoints } from './webhooks.ts';

export const SDK_VERSION = '0.1.0';

export interface ToolrunOptions {
  /** A team API key (svc_live_... or svc_test_...); defaults to TOOLRUN_API_KEY. */
  apiKey?: string;
  /** The service's base address, without /v1; defaults to TOOLRUN_BASE_URL, then http://127.0.0.1:8080. */
  baseUrl?: string;
  /** Retries of a retryable failure (see RetryPolicy); default 3. */
  maxRetries?: number;
  /** Per-attempt time limit in ms; default 60000. */
  timeoutMs?: number;
  /** A Retry-After longer than this (seconds) is not waited out inside a call; default 60. */
  maxRetryAfterSeconds?: number;
  /** Called before each automatic retry (for logging). */
  onRetry?: (info: RetryInfo) => void;
  /** Another fetch implementation (a proxy agent, say); defaults to the global fetch. */
  fetch?: typeof globalThis.fetch;
  /** Tests only: lets runs.wait() poll faster than every 2 s. Never set this against a real service. */
  testing?: { minPollIntervalMs?: number; backoffBaseMs?: number };
}

/** The Tool-Run API v1: `new Toolrun({ apiKey, baseUrl })`. */
export class Toolrun {
  readonly tools: {
    list(opts?: { signal?: AbortSignal }): Promise<ToolList>;
    /** Prices the exact inputs; starts and spends nothing. */
    estimate(toolId: string, body?: EstimateBody, opts?: { signal?: AbortSignal }): Promise<Estimate>;
  };
  readonly runs: Runs;
  readonly files: Files;
  readonly webhookEndpoints: WebhookEndpoints;
  /** The team's events as a stream (GET /v1/events): `events.stream()`. */
  readonly events: Events;
  readonly baseUrl: string;
  private readonly http: Transport;

  constructor(opts: ToolrunOptions = {}) {
    const apiKey = opts.apiKey ?? process.env.TOOLRUN_API_KEY;
    if (!apiKey) throw new TypeError('Toolrun needs an API key: pass { apiKey } or set TOOLRUN_API_KEY');
    this.baseUrl = (opts.baseUrl ?? process.env.TOOLRUN_BASE_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, '').replace(/\/v1$/, '');
    const fetchFn = opts.fetch ?? globalThis.fetch;
    this.http = new Transport({
      apiKey,
      baseUrl: this.baseUrl,
      maxRetries: opts.maxRetries ?? 3,
      timeoutMs: opts.timeoutMs ?? 60_000,
      maxRetryAfterSeconds: opts.maxRetryAfterSeconds ?? 60,
      backoffBaseMs: opts.testing?.backoffBaseMs ?? 500,
      userAgent: `toolrun-sdk/${SDK_VERSION} node/${process.versions.node}`,
      fetch: (input, init) => fetchFn(input, init),
      ...(opts.onRetry ? { onRetry: opts.onRetry } : {}),
    });
    const http = this.http;
    this.tools = {
      list: (o = {}) => http.request('GET', '/v1/tools', { retry: 'idempotent', signal: o.signal }),
      estimate: (toolId, body = {}, o = {}) =>
        http.request('POST', `/v1/tools/${encodeURIComponent(toolId)}/estimate`, { body, retry: 'idempotent', signal: o.signal }),
    };
    this.runs = new Runs(http, { minPollIntervalMs: opts.testing?.minPollIntervalMs ?? 2000 });
    this.files = new Files(http);
    this.webhookEndpoints = new WebhookEndpoints(http);
    this.events = new Events(http);
  }

  /**
   * The common case in one call: uploads what is local in `inputs`, starts the run, waits until
   * it is final and, with `download`, downloads every output into that directory:
   * `await toolrun.run('image_upscale', { image: './photo.jpg' }, { download: './out' })`.
   *
   * In a slot the tool declares (GET /v1/tools) with kind image, video or audio, the value is one
   * item or a list (sent as a list): a file id (a UUID) goes as it is; any other string is a
   * local path, which must name a file; bytes, a Blob, a Node Readable or a web ReadableStream
   * (read into memory first) is uploaded; anything else goes as it is. Other slots' values go as
   * they are. Before the first upload, an estimate checks the rest of the inputs, so a bad value
   * or an unknown tool throws its ToolrunError (422 with `errors[]`, 404, ...) having uploaded
   * nothing. A run that ends failed or canceled throws RunFailedError (`check: false` returns it).
   */
  run(toolId: string, inputs: Record<string, unknown> = {}, opts: RunOptions = {}): Promise<RunResult> {
    return runTool({ tools: this.tools, runs: this.runs, files: this.files }, toolId, inputs, opts);
  }

  /** The team and key making the request, with the Sparks available now. */
  me(opts: { signal?: AbortSignal } = {}): Promise<Me> {
    return this.http.request('GET', '/v1/me', { retry: 'idempotent', signal: opts.signal });
  }
}
