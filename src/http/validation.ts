import type { FastifySchemaValidationError } from 'fastify/types/schema.js';
import type { FieldError, Loc } from './errors.js';

const CONTEXT_LOC: Record<string, string> = {
  body: 'body',
  params: 'path',
  querystring: 'query',
  headers: 'header',
};

function pointerToLoc(pointer: string): Loc {
  if (!pointer) return [];
  return pointer
    .split('/')
    .slice(1)
    .map((seg) => seg.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((seg) => (/^(0|[1-9]\d*)$/.test(seg) ? Number(seg) : seg));
}

interface Described {
  suffix?: string;
  message: string;
  code: string;
}

function describe(e: FastifySchemaValidationError): Described {
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required':
      return { suffix: String(p.missingProperty), message: 'is required', code: 'missing' };
    case 'additionalProperties':
      return { suffix: String(p.additionalProperty), message: 'is not a known field', code: 'unknown_field' };
    case 'type':
      return { message: `must be ${String(p.type).replace(',', ' or ')}`, code: 'wrong_type' };
    case 'minLength':
      return { message: `must be at least ${String(p.limit)} characters`, code: 'too_short' };
    case 'maxLength':
      return { message: `must be at most ${String(p.limit)} characters`, code: 'too_long' };
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return { message: `must be ${String(p.comparison)} ${String(p.limit)}`, code: 'out_of_range' };
    case 'minItems':
      return { message: `must have at least ${String(p.limit)} items`, code: 'too_few' };
    case 'maxItems':
      return { message: `must have at most ${String(p.limit)} items`, code: 'too_many' };
    case 'uniqueItems':
      return { message: 'must not contain duplicates', code: 'duplicate' };
    case 'format':
      return { message: `must be a valid ${String(p.format)}`, code: 'invalid_format' };
    case 'enum':
    case 'const':
      return {
        message: `must be one of ${((p.allowedValues as unknown[]) ?? [p.allowedValue]).map(String).join(', ')}`,
        code: 'invalid_choice',
      };
    case 'pattern':
      return { message: 'has an invalid format', code: 'invalid_format' };
    default:
      return { message: e.message ?? 'is invalid', code: 'invalid' };
  }
}

/**
 * Turns Ajv's errors into one entry per bad field. Union branches (nullable fields) report one
 * error per branch; we keep the first specific one for each location.
 */
export function fieldErrors(errors: FastifySchemaValidationError[], context: string): FieldError[] {
  const root = CONTEXT_LOC[context] ?? context;
  const byLoc = new Map<string, FieldError>();
  for (const e of errors) {
    if (e.keyword === 'anyOf' || e.keyword === 'oneOf' || e.keyword === 'if') continue;
    const d = describe(e);
    const loc: Loc = [root, ...pointerToLoc(e.instancePath)];
    if (d.suffix !== undefined) loc.push(d.suffix);
    const key = JSON.stringify(loc);
    if (!byLoc.has(key)) byLoc.set(key, { loc, message: d.message, code: d.code });
  }
  if (byLoc.size === 0) {
    byLoc.set(root, { loc: [root], message: 'is invalid', code: 'invalid' });
  }
  return [...byLoc.values()];
}
