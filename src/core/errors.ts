/** The one table that maps every error code to its HTTP status. */
export const ERROR_STATUS = {
  bad_request: 400,
  api_key_required: 401,
  invalid_api_key: 401,
  session_required: 401,
  invalid_credentials: 401,
  insufficient_sparks: 402,
  plan_upgrade_required: 403,
  consent_required: 403,
  insufficient_scope: 403,
  insufficient_role: 403,
  url_expired: 403,
  signature_invalid: 403,
  csrf_failed: 403,
  not_found: 404,
  tool_not_found: 404,
  run_not_found: 404,
  output_not_found: 404,
  file_not_found: 404,
  webhook_endpoint_not_found: 404,
  upload_not_found: 404,
  invite_invalid: 404,
  member_not_found: 404,
  api_key_not_found: 404,
  delivery_not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  tool_execution_pipeline: 409,
  output_not_ready: 409,
  run_not_cancelable: 409,
  webhook_endpoint_limit_reached: 409,
  key_limit_reached: 409,
  last_owner: 409,
  member_exists: 409,
  delivery_not_redeliverable: 409,
  part_in_progress: 409,
  part_too_small: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  invalid_request: 422,
  idempotency_key_reused: 422,
  rate_limited: 429,
  headers_too_large: 431,
  internal_error: 500,
  service_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export type Loc = (string | number)[];

export interface FieldError {
  loc: Loc;
  message: string;
  code: string | null;
}

export interface ErrorBody {
  error: {
    code: string;
    message: string;
    request_id: string | null;
    errors: FieldError[] | null;
    details: Record<string, unknown> | null;
  };
}

/** An error meant for the client: its code picks the status, its message says what to do. */
export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly opts: { errors?: FieldError[]; details?: Record<string, unknown>; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = ERROR_STATUS[code];
  }
}

/** errors[] lists at most this many entries: a body of 100,000 unknown keys must not make a 10 MB answer. */
export const MAX_FIELD_ERRORS = 100;

export function invalidRequest(errors: FieldError[], message?: string): ApiError {
  const first = errors[0];
  const summary =
    message ??
    (errors.length === 1 && first
      ? `Invalid request: ${first.loc.join('.')}: ${first.message}`
      : errors.length > MAX_FIELD_ERRORS
        ? `Invalid request: ${errors.length} problems; errors[] lists the first ${MAX_FIELD_ERRORS}.`
        : `Invalid request: ${errors.length} problems; see errors[] for each.`);
  return new ApiError('invalid_request', summary, { errors: errors.slice(0, MAX_FIELD_ERRORS) });
}

export function envelope(err: ApiError, requestId: string): ErrorBody {
  return {
    error: {
      code: err.code,
      message: err.message,
      request_id: requestId,
      errors: err.opts.errors ?? null,
      details: err.opts.details ?? null,
    },
  };
}

/** A failure whose message is fit for the run's `error` field (no stack, no internals). */
export class ToolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ToolError';
  }
}
