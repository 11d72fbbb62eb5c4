import { Type, type TSchema } from 'typebox';
import { ERROR_STATUS, type ErrorCode } from './errors.js';

/**
 * A UUID in a path. The pattern as well as the format: Ajv's uuid format also admits
 * `urn:uuid:...`, which PostgreSQL does not take.
 */
export const PathUuid = (description: string) =>
  Type.String({ format: 'uuid', pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$', description });

/**
 * A route's preValidation hook for a page size in the query string: query values arrive as text
 * and are not coerced (bodies are strict too), so a limit of digits is read as the number it
 * spells before the schema checks its range; anything else is left for the schema to refuse.
 */
export async function numericLimit(request: { query: unknown }): Promise<void> {
  const q = request.query as Record<string, unknown>;
  if (typeof q.limit === 'string' && /^[0-9]{1,3}$/.test(q.limit)) q.limit = Number(q.limit);
}

export const FieldErrorSchema = Type.Object(
  {
    loc: Type.Array(Type.Union([Type.String(), Type.Integer()]), {
      description: 'Where the problem is; the last entry names the slot or field.',
    }),
    message: Type.String(),
    code: Type.Union([Type.String(), Type.Null()]),
  },
  { additionalProperties: false },
);

export const ErrorResponseSchema = Type.Object(
  {
    error: Type.Object(
      {
        code: Type.String({ description: 'Machine-readable; clients branch on it. Unknown codes must be tolerated.' }),
        message: Type.String({ description: 'Plain English; not to be parsed.' }),
        request_id: Type.Union([Type.String(), Type.Null()], { description: 'Equals the X-Request-Id header.' }),
        errors: Type.Union([Type.Array(FieldErrorSchema), Type.Null()]),
        details: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()]),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false, $id: 'ErrorResponse', title: 'ErrorResponse' },
);

const STATUS_TEXT: Record<number, string> = {
  401: 'The API key is missing or not valid.',
  402: 'The team lacks the Sparks this run holds.',
  403: 'The plan, scope or role does not allow this call.',
  404: 'Not found.',
  408: 'The request did not arrive in time (its headers, or its body); the connection is closed. Send it again at a steady pace.',
  409: 'Conflict with the current state.',
  413: 'The body is too large.',
  415: 'The body is not application/json.',
  422: 'The request is invalid; errors[] names each problem.',
  429: 'Rate limited; wait for Retry-After seconds.',
  500: 'Failure on the service side; retry with backoff.',
  503: 'The service is temporarily unavailable; retry with backoff.',
};

/**
 * What any request can get, whatever its route: its headers did not arrive in time (408), or the
 * server is shutting down (503).
 */
const ANY_REQUEST: ErrorCode[] = ['request_timeout', 'service_unavailable'];

/** Error responses of a route that reads nothing from the request and touches nothing. */
export function anyRequestErrorResponses(): Record<number, TSchema> {
  return byStatus(ANY_REQUEST);
}

/** Error responses for a route, by status, each described by the codes it may carry. */
export function errorResponses(...codes: ErrorCode[]): Record<number, TSchema> {
  return byStatus(['invalid_request', 'internal_error', ...ANY_REQUEST, ...codes]);
}

function byStatus(codes: ErrorCode[]): Record<number, TSchema> {
  const grouped = new Map<number, string[]>();
  for (const code of codes) {
    const status = ERROR_STATUS[code];
    grouped.set(status, [...new Set([...(grouped.get(status) ?? []), code])]);
  }
  const out: Record<number, TSchema> = {};
  for (const [status, list] of [...grouped].sort(([a], [b]) => a - b)) {
    out[status] = Type.Ref('ErrorResponse', {
      description: `${STATUS_TEXT[status] ?? 'Error.'} Codes: ${list.join(', ')}.`,
    });
  }
  return out;
}

/** The error statuses every authenticated route can answer. */
export const AUTH_ERRORS: ErrorCode[] = [
  'api_key_required',
  'invalid_api_key',
  'plan_upgrade_required',
  'insufficient_scope',
  'rate_limited',
];
