import type { FastifyReply, FastifyRequest } from 'fastify';
import { invalidRequest, type FieldError, type Loc } from '../core/errors.js';
import { endAtFields, fieldErrors } from '../core/validation.js';

/**
 * Text the service can neither store nor pass on: NUL (PostgreSQL's text and jsonb refuse U+0000)
 * and half of a surrogate pair without its other half (not Unicode at all; jsonb refuses the
 * escape, UTF-8 cannot encode it). Without the `u` flag the pattern sees UTF-16 code units, so a
 * well-formed pair (an emoji) does not match.
 */
const BAD_CHARACTER = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Header values: printable ASCII only (see headerErrors). */
const NOT_PRINTABLE_ASCII = /[^\x20-\x7e]/;

export const INVALID_CHARACTER = 'invalid_character';

const codePoint = (unit: number) => `U+${unit.toString(16).toUpperCase().padStart(4, '0')}`;

function describeBad(s: string): string | null {
  const m = BAD_CHARACTER.exec(s);
  if (!m) return null;
  const unit = s.charCodeAt(m.index);
  const what = unit === 0 ? 'the NUL character (U+0000)' : `an unpaired surrogate (${codePoint(unit)}), which is not valid Unicode`;
  return `${what} at index ${m.index}`;
}

/** One entry per string (value or object key, at any depth) that holds a bad character. */
export function characterErrors(value: unknown, loc: Loc, out: FieldError[] = []): FieldError[] {
  if (typeof value === 'string') {
    const bad = describeBad(value);
    if (bad) out.push({ loc, message: `must not contain ${bad}`, code: INVALID_CHARACTER });
  } else if (Array.isArray(value)) {
    // Bodies nest at most 64 levels (the JSON parser's cap), so recursion stays shallow.
    value.forEach((item, i) => characterErrors(item, [...loc, i], out));
  } else if (typeof value === 'object' && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      const bad = describeBad(key);
      if (bad) out.push({ loc: [...loc, key], message: `is a field name that contains ${bad}`, code: INVALID_CHARACTER });
      characterErrors(item, [...loc, key], out);
    }
  }
  return out;
}

/** idempotency-key -> Idempotency-Key, as the API names its headers in errors[]. */
const headerName = (lower: string) => lower.replace(/(^|-)([a-z])/g, (_, dash: string, c: string) => dash + c.toUpperCase());

/**
 * A header value reaches us as bytes without a charset: Node has already refused NUL and other
 * controls (400), and reads each byte from 0x80 as one Latin-1 character, so a UTF-8 "é" would be
 * kept as "Ã©" and count as two characters. Declared headers (Idempotency-Key) therefore take
 * printable ASCII only, as the IETF Idempotency-Key draft's structured-field string does.
 */
function headerErrors(request: FastifyRequest, declared: string[]): FieldError[] {
  const out: FieldError[] = [];
  for (const name of declared) {
    const value = request.headers[name];
    for (const v of typeof value === 'string' ? [value] : (value ?? [])) {
      const m = NOT_PRINTABLE_ASCII.exec(v);
      if (m) {
        out.push({
          loc: ['header', headerName(name)],
          message: `must be printable ASCII (U+0020 to U+007E); found ${codePoint(v.charCodeAt(m.index))} at index ${m.index}`,
          code: INVALID_CHARACTER,
        });
        break;
      }
    }
  }
  return out;
}

function declaredProperties(schema: unknown): string[] {
  const props = typeof schema === 'object' && schema !== null ? (schema as { properties?: unknown }).properties : undefined;
  return typeof props === 'object' && props !== null ? Object.keys(props) : [];
}

/** Problems listed first by location, then any schema problem at a location not already named. */
function merged(first: FieldError[], then: FieldError[]): FieldError[] {
  const named = new Set(first.map((e) => JSON.stringify(e.loc)));
  return [...first, ...then.filter((e) => !named.has(JSON.stringify(e.loc)))];
}

type Done = (err?: Error) => void;
type Hook = (request: FastifyRequest, reply: FastifyReply, done: Done) => void;

/** A route's character checks, each present only when its schema declares what it checks. */
export interface StringHooks {
  onRequest?: Hook;
  preValidation?: Hook;
  preHandler?: Hook;
}

/** What the route's schema declares, as Fastify hands it to onRoute. */
export interface DeclaredInput {
  params?: unknown;
  querystring?: unknown;
  headers?: unknown;
  body?: unknown;
}

export interface StringChecks {
  /** The character problems of this request's body and headers, then the schema's (for the error handler). */
  withSchemaErrors(request: FastifyRequest, schemaErrors: FieldError[]): FieldError[];
  /** The hooks a route with this schema needs (none when it declares no input). */
  routeHooks(schema: DeclaredInput | undefined): StringHooks;
}

/**
 * Every string an operation takes in (what its schema declares: path parameters, query, body
 * values and keys at any depth, headers) is checked here, once, before any handler runs, so no
 * service code or storage ever sees one it cannot keep. Hooks of the routes that declare such
 * input (routeHooks, put on each route as it is added):
 * - onRequest, after authentication: path and query (they name what is asked for, so a route's
 *   own early checks, like the tool lookup before the body is read, only see clean ones);
 * - preValidation: body and declared headers; their problems are reported together with the
 *   schema's (in the error handler when the schema fails, in preHandler when it passes or the
 *   route attaches its verdict for itself).
 * Routes that declare no such input (GET /v1/me, /healthz, the signed storage URLs, bodies of
 * bodiless operations) get no hook at all: app-wide hooks ran on every request and read
 * request.routeOptions, which Fastify builds afresh on each read (issue 29).
 */
export function registerStringChecks(): StringChecks {
  const found = new WeakMap<FastifyRequest, FieldError[]>();
  return {
    withSchemaErrors: (request, schemaErrors) => merged(found.get(request) ?? [], schemaErrors),
    routeHooks(schema) {
      const hooks: StringHooks = {};
      if (!schema) return hooks;
      const { params, querystring, headers, body } = schema;
      if (params || querystring) {
        hooks.onRequest = (request, _reply, done) => {
          const errors: FieldError[] = [];
          if (params) characterErrors(request.params, ['path'], errors);
          if (querystring) characterErrors(request.query, ['query'], errors);
          done(errors.length ? invalidRequest(endAtFields(errors)) : undefined);
        };
      }
      if (headers || body) {
        const declared = declaredProperties(headers);
        hooks.preValidation = (request, _reply, done) => {
          const errors = headerErrors(request, declared);
          if (body && request.body !== undefined) characterErrors(request.body, ['body'], errors);
          // An item of a list is reported on the list, as the schema's own errors are.
          if (errors.length) found.set(request, endAtFields(errors));
          done();
        };
        hooks.preHandler = (request, _reply, done) => {
          const errors = found.get(request);
          if (!errors) return done();
          // A route that attaches the schema's verdict (estimate, start) would report it later; the
          // character problems come first, so report both here.
          const attached = request.validationError;
          done(invalidRequest(merged(errors, attached ? fieldErrors(attached.validation, attached.validationContext ?? 'body') : [])));
        };
      }
      return hooks;
    },
  };
}
