import type { FieldError, Run } from './types.ts';

/**
 * Error codes the service documents. The service adds codes within v1 without notice, so a
 * `ToolrunError.code` is any string: branch on the ones you know, treat the rest by `status`.
 */
export type KnownErrorCode =
  | 'api_key_required'
  | 'invalid_api_key'
  | 'insufficient_sparks'
  | 'plan_upgrade_required'
  | 'consent_required'
  | 'insufficient_scope'
  | 'insufficient_role'
  | 'not_found'
  | 'tool_not_found'
  | 'run_not_found'
  | 'output_not_found'
  | 'file_not_found'
  | 'webhook_endpoint_not_found'
  | 'method_not_allowed'
  | 'tool_execution_pipeline'
  | 'output_not_ready'
  | 'run_not_cancelable'
  | 'webhook_endpoint_limit_reached'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'invalid_request'
  | 'idempotency_key_reused'
  | 'rate_limited'
  | 'internal_error'
  | 'service_unavailable'
  // Raised by the SDK itself when no HTTP answer came back (status 0).
  | 'connection_error'
  | 'timeout'
  // Raised by the SDK itself about a run (status 0): runs.wait's timeoutMs passed; a run that
  // did not succeed where only a succeeded one will do (runs.download, toolrun.run: RunFailedError).
  | 'wait_timeout'
  | 'run_not_succeeded';

/** A known code, or any other string the service may send. */
export type ErrorCode = KnownErrorCode | (string & {});

export interface ToolrunErrorInit {
  status: number;
  code: ErrorCode;
  message: string;
  requestId?: string | null;
  errors?: FieldError[] | null;
  details?: Record<string, unknown> | null;
  retryAfterSeconds?: number | null;
  body?: unknown;
  cause?: unknown;
}

/**
 * Every failure of a call to the API: an error answer (`status` is the HTTP status, `code` the
 * envelope's code) or no answer at all (`status` 0, `code` `connection_error` or `timeout`).
 */
export class ToolrunError extends Error {
  /** HTTP status; 0 when no response arrived. */
  readonly status: number;
  /** Machine-readable code from the error envelope (unknown codes are passed through as they are). */
  readonly code: ErrorCode;
  /** The X-Request-Id of the failed request: quote it when asking for help. */
  readonly requestId: string | null;
  /** On 422: one entry per bad input slot or field. */
  readonly errors: FieldError[] | null;
  /** Extra context for some codes, e.g. `required_scope`, `limit_per_minute`, `needed_sparks`. */
  readonly details: Record<string, unknown> | null;
  /** Seconds from the Retry-After header (429, 503), when there was one. */
  readonly retryAfterSeconds: number | null;
  /** The parsed response body, unknown fields included. */
  readonly body: unknown;

  constructor(init: ToolrunErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'ToolrunError';
    this.status = init.status;
    this.code = init.code;
    this.requestId = init.requestId ?? null;
    this.errors = init.errors ?? null;
    this.details = init.details ?? null;
    this.retryAfterSeconds = init.retryAfterSeconds ?? null;
    this.body = init.body;
  }
}

/**
 * `toolrun.run()` when the run ended `failed` or `canceled`: `run` is the final run (`status`,
 * `error`). Code `run_not_succeeded`, status 0 (every request succeeded; the run did not).
 */
export class RunFailedError extends ToolrunError {
  readonly run: Run;

  constructor(run: Run) {
    super({
      status: 0,
      code: 'run_not_succeeded',
      message: `Run ${run.id} of ${run.tool_id ?? 'a tool'} ${run.status === 'canceled' ? 'was canceled' : `failed${run.error ? `: ${run.error}` : ''}`}`,
      details: { run_id: run.id, status: run.status, error: run.error },
    });
    this.name = 'RunFailedError';
    this.run = run;
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function fieldErrors(v: unknown): FieldError[] | null {
  if (!Array.isArray(v)) return null;
  return v.filter(isRecord).map((e) => ({
    ...e,
    loc: Array.isArray(e.loc) ? e.loc.filter((x): x is string | number => typeof x === 'string' || typeof x === 'number') : [],
    message: typeof e.message === 'string' ? e.message : '',
    code: typeof e.code === 'string' ? e.code : null,
  }));
}

/** Seconds from a Retry-After header: delta seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | null {
  if (!value) return null;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Number(trimmed);
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? null : Math.max(0, (at - now) / 1000);
}

/** The error for a non-2xx response, read from the envelope when there is one. */
export function errorFromResponse(status: number, headers: Headers, text: string): ToolrunError {
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    // not JSON (a proxy's HTML page, say): keep the text
  }
  const headerId = headers.get('x-request-id');
  const retryAfterSeconds = parseRetryAfter(headers.get('retry-after'));
  const envelope = isRecord(body) && isRecord(body.error) ? body.error : null;
  if (envelope) {
    return new ToolrunError({
      status,
      code: typeof envelope.code === 'string' ? envelope.code : `http_${status}`,
      message: typeof envelope.message === 'string' ? envelope.message : `HTTP ${status}`,
      requestId: typeof envelope.request_id === 'string' ? envelope.request_id : headerId,
      errors: fieldErrors(envelope.errors),
      details: isRecord(envelope.details) ? envelope.details : null,
      retryAfterSeconds,
      body,
    });
  }
  const snippet = text.replace(/\s+/g, ' ').trim().slice(0, 200);
  return new ToolrunError({
    status,
    code: `http_${status}`,
    message: snippet ? `HTTP ${status}: ${snippet}` : `HTTP ${status}`,
    requestId: headerId,
    retryAfterSeconds,
    body,
  });
}
