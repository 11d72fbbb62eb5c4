import { errorFromResponse, ToolrunError } from './errors.ts';

/**
 * When a failed call may be sent again without asking the caller:
 * - `idempotent`: GET requests, estimate (it starts and spends nothing) and start run (it always
 *   carries an Idempotency-Key, so a repeat returns the run already started). Retried on a
 *   connection failure or timeout, 408, 429, 500, 502, 503 and 504.
 * - `refused-only`: everything else (upload-url, complete, cancel, webhook endpoint changes and
 *   tests). Retried only when the service certainly did nothing: a 429 (the rate limiter answers
 *   before the request is handled) or a refused connection (nothing was sent). A 500, 503 or a
 *   connection cut mid-request may come after the change was made, so those reach the caller.
 */
export type RetryPolicy = 'idempotent' | 'refused-only';

export interface RetryInfo {
  method: string;
  path: string;
  /** 1 for the first retry. */
  attempt: number;
  delayMs: number;
  error: ToolrunError;
}

export interface TransportOptions {
  apiKey: string;
  baseUrl: string;
  maxRetries: number;
  timeoutMs: number;
  /** A Retry-After longer than this is not waited out: the error reaches the caller at once. */
  maxRetryAfterSeconds: number;
  backoffBaseMs: number;
  userAgent: string;
  fetch: typeof globalThis.fetch;
  onRetry?: (info: RetryInfo) => void;
}

export interface RequestOptions {
  body?: unknown;
  headers?: Record<string, string>;
  retry: RetryPolicy;
  signal?: AbortSignal;
}

export interface Response<T> {
  status: number;
  headers: Headers;
  data: T;
}

/** `?a=1&b=x` from the defined values of a query object ('' when none are). */
export function queryString(query: Record<string, string | number | boolean | undefined>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined) params.set(name, String(value));
  const qs = params.toString();
  return qs ? `?${qs}` : '';
}

/** Resolves after ms, or rejects with the signal's reason when it is aborted first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

const RETRY_STATUSES = new Set([408, 429, 500, 502, 503, 504]);

function connectionRefused(err: ToolrunError): boolean {
  let cause: unknown = err.cause;
  for (let i = 0; i < 4 && cause; i++) {
    if (typeof cause === 'object' && (cause as { code?: unknown }).code === 'ECONNREFUSED') return true;
    cause = (cause as { cause?: unknown }).cause;
  }
  return false;
}

export function isRetryable(policy: RetryPolicy, err: ToolrunError): boolean {
  if (policy === 'idempotent') return err.status === 0 || RETRY_STATUSES.has(err.status);
  return err.status === 429 || (err.status === 0 && connectionRefused(err));
}

/** Exponential backoff with jitter (half to all of base * 2^n, at most 8 s), or Retry-After. */
export function retryDelayMs(err: ToolrunError, retryIndex: number, opts: Pick<TransportOptions, 'backoffBaseMs' | 'maxRetryAfterSeconds'>): number | null {
  if (err.retryAfterSeconds !== null) {
    if (err.retryAfterSeconds > opts.maxRetryAfterSeconds) return null;
    return Math.ceil(err.retryAfterSeconds * 1000);
  }
  const ceiling = Math.min(8000, opts.backoffBaseMs * 2 ** retryIndex);
  return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
}

/** Sends a fetch; turns "no answer" into a ToolrunError, and leaves the caller's abort as it is. */
export async function fetchOnce(
  fetchFn: typeof globalThis.fetch,
  url: string,
  init: RequestInit,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<globalThis.Response> {
  const timeout = AbortSignal.timeout(timeoutMs);
  const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
  try {
    return await fetchFn(url, { ...init, signal: combined });
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    if (timeout.aborted) {
      throw new ToolrunError({ status: 0, code: 'timeout', message: `No answer from ${new URL(url).host} within ${timeoutMs} ms`, cause: err });
    }
    const detail = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : '';
    throw new ToolrunError({ status: 0, code: 'connection_error', message: `Could not reach ${new URL(url).host}${detail}`, cause: err });
  }
}

/** JSON over HTTP with the key, the retry rules above and ToolrunError for every failure. */
export class Transport {
  constructor(readonly opts: TransportOptions) {}

  url(path: string): string {
    return this.opts.baseUrl.replace(/\/+$/, '') + path;
  }

  async request<T>(method: string, path: string, opts: RequestOptions): Promise<T> {
    return (await this.requestWithHeaders<T>(method, path, opts)).data;
  }

  async requestWithHeaders<T>(method: string, path: string, opts: RequestOptions): Promise<Response<T>> {
    for (let retry = 0; ; retry++) {
      try {
        return await this.once<T>(method, path, opts);
      } catch (err) {
        if (!(err instanceof ToolrunError) || retry >= this.opts.maxRetries || !isRetryable(opts.retry, err)) throw err;
        const delayMs = retryDelayMs(err, retry, this.opts);
        if (delayMs === null) throw err;
        this.opts.onRetry?.({ method, path, attempt: retry + 1, delayMs, error: err });
        await sleep(delayMs, opts.signal);
      }
    }
  }

  private async once<T>(method: string, path: string, opts: RequestOptions): Promise<Response<T>> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.opts.apiKey}`,
      accept: 'application/json',
      'user-agent': this.opts.userAgent,
      ...opts.headers,
    };
    const init: RequestInit = { method, headers };
    if (opts.body !== undefined) {
      headers['content-type'] = 'application/json';
      init.body = JSON.stringify(opts.body);
    }
    const res = await fetchOnce(this.opts.fetch, this.url(path), init, this.opts.timeoutMs, opts.signal);
    let text: string;
    try {
      text = await res.text();
    } catch (err) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      throw new ToolrunError({ status: 0, code: 'connection_error', message: `The answer to ${method} ${path} was cut off`, cause: err });
    }
    if (!res.ok) throw errorFromResponse(res.status, res.headers, text);
    let data: unknown;
    try {
      data = text ? JSON.parse(text) : undefined;
    } catch (err) {
      throw new ToolrunError({
        status: res.status,
        code: 'invalid_response',
        message: `${method} ${path} answered ${res.status} with a body that is not JSON`,
        requestId: res.headers.get('x-request-id'),
        body: text,
        cause: err,
      });
    }
    return { status: res.status, headers: res.headers, data: data as T };
  }
}
