import type { FastifySchemaValidationError } from 'fastify/types/schema.js';
import type { FieldError, Loc } from './errors.js';
import { count, itemPosition } from './wording.js';

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

/** Ajv gives a type keyword's types as "string", ["string","null"] or "string,null". */
function typeNames(raw: unknown): string[] {
  const list = Array.isArray(raw) ? raw.map(String) : String(raw).split(',');
  return list.map((t) => t.trim()).filter(Boolean);
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
      return { message: `must be ${typeNames(p.type).join(' or ')}`, code: 'wrong_type' };
    case 'minLength':
      return { message: `must be at least ${count(Number(p.limit), 'character')}`, code: 'too_short' };
    case 'maxLength':
      return { message: `must be at most ${count(Number(p.limit), 'character')}`, code: 'too_long' };
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return { message: `must be ${String(p.comparison)} ${String(p.limit)}`, code: 'out_of_range' };
    case 'minItems':
      return { message: `must have at least ${count(Number(p.limit), 'item')}`, code: 'too_few' };
    case 'maxItems':
      return { message: `must have at most ${count(Number(p.limit), 'item')}`, code: 'too_many' };
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

const UNION_KEYWORDS = new Set(['anyOf', 'oneOf', 'if']);

function isUnder(path: string, parent: string): boolean {
  return path === parent || path.startsWith(`${parent}/`);
}

/** Values a failed keyword lists, for keywords whose union branches are merged into one entry. */
function mergeable(e: FastifySchemaValidationError): { code: string; values: string[]; message: (v: string[]) => string } | null {
  const p = e.params as Record<string, unknown>;
  if (e.keyword === 'type') return { code: 'wrong_type', values: typeNames(p.type), message: (v) => `must be ${v.join(' or ')}` };
  if (e.keyword === 'enum' || e.keyword === 'const') {
    const values = e.keyword === 'enum' ? ((p.allowedValues as unknown[]) ?? []) : [p.allowedValue];
    return { code: 'invalid_choice', values: values.map(String), message: (v) => `must be one of ${v.join(', ')}` };
  }
  return null;
}

/**
 * Turns Ajv's errors into one entry per bad field. Union branches (nullable fields, unions of
 * literals) report one error per branch: type errors at one location are merged ("must be string
 * or null"), as are allowed values ("must be one of fade, wipe"), and a branch's type error is
 * dropped when another branch of the same union matched the type and said what is wrong inside it.
 */
export function fieldErrors(errors: FastifySchemaValidationError[], context: string): FieldError[] {
  const root = CONTEXT_LOC[context] ?? context;
  const unionPaths = errors.filter((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf').map((e) => e.instancePath);
  const specific = errors.filter((e) => e.keyword !== 'type' && !UNION_KEYWORDS.has(e.keyword));
  const byLoc = new Map<string, FieldError>();
  const mergedValues = new Map<string, string[]>();
  for (const e of errors) {
    if (UNION_KEYWORDS.has(e.keyword)) continue;
    if (e.keyword === 'type' && unionPaths.includes(e.instancePath) && specific.some((s) => isUnder(s.instancePath, e.instancePath))) {
      continue;
    }
    const d = describe(e);
    const loc: Loc = [root, ...pointerToLoc(e.instancePath)];
    if (d.suffix !== undefined) loc.push(d.suffix);
    const key = JSON.stringify(loc);
    const existing = byLoc.get(key);
    const merge = mergeable(e);
    if (merge && (!existing || existing.code === merge.code)) {
      const values = [...new Set([...(mergedValues.get(key) ?? []), ...merge.values])];
      mergedValues.set(key, values);
      if (existing) existing.message = merge.message(values);
      else byLoc.set(key, { loc, message: merge.message(values), code: merge.code });
      continue;
    }
    if (!existing) byLoc.set(key, { loc, message: d.message, code: d.code });
  }
  if (byLoc.size === 0) {
    byLoc.set(root, { loc: [root], message: 'is invalid', code: 'invalid' });
  }
  return endAtFields([...byLoc.values()]);
}

/**
 * The spec: loc's last entry names the field. A problem with an item of a list (["body",
 * "events", 1]) is said of the list, the message naming the item; one entry per field, the
 * first item's problem.
 */
export function endAtFields(errors: FieldError[]): FieldError[] {
  const byField = new Map<string, FieldError>();
  for (const e of errors) {
    let end = e.loc.length;
    while (end > 1 && typeof e.loc[end - 1] === 'number') end--;
    const indexes = e.loc.slice(end) as number[];
    const folded = indexes.length ? { ...e, loc: e.loc.slice(0, end), message: `${itemPosition(indexes)}: ${e.message}` } : e;
    const key = JSON.stringify(folded.loc);
    if (!byField.has(key)) byField.set(key, folded);
  }
  return [...byField.values()];
}
