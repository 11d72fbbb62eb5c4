// Values from the JSON schemas of the OpenAPI document: a minimal valid example, and fast-check
// arbitraries of valid values and of values broken in every way a hostile client might try.
import fc from 'fast-check';
import { isObject, type Json } from './openapi-contract.js';

/** The request body schema of an operation (application/json), or null when it takes none. */
export function bodySchema(op: Json): Json | null {
  const rb = op.requestBody;
  if (!isObject(rb) || !isObject(rb.content)) return null;
  const media = rb.content['application/json'];
  return isObject(media) && isObject(media.schema) ? media.schema : null;
}

/** The smallest valid value: required properties only, shortest strings, lowest numbers. */
export function exampleOf(schema: Json): unknown {
  const alternatives = Array.isArray(schema.anyOf) ? schema.anyOf : Array.isArray(schema.oneOf) ? schema.oneOf : null;
  if (alternatives) {
    const first = alternatives.find((s) => isObject(s) && s.type !== 'null') ?? alternatives[0];
    return isObject(first) ? exampleOf(first) : null;
  }
  if (Array.isArray(schema.enum)) return schema.enum[0];
  if ('const' in schema) return schema.const;
  switch (schema.type) {
    case 'object': {
      const props = isObject(schema.properties) ? schema.properties : {};
      const required = Array.isArray(schema.required) ? schema.required.map(String) : [];
      return Object.fromEntries(required.map((k) => [k, isObject(props[k]) ? exampleOf(props[k]) : null]));
    }
    case 'array': {
      const min = typeof schema.minItems === 'number' ? schema.minItems : 0;
      return Array.from({ length: min }, () => (isObject(schema.items) ? exampleOf(schema.items) : null));
    }
    case 'string':
      return schema.format === 'uuid' ? '00000000-0000-4000-8000-000000000000' : 'x'.repeat(typeof schema.minLength === 'number' ? schema.minLength : 1);
    case 'integer':
    case 'number': {
      if (typeof schema.minimum === 'number') return schema.minimum;
      if (typeof schema.exclusiveMinimum === 'number') return schema.type === 'integer' ? schema.exclusiveMinimum + 1 : schema.exclusiveMinimum + 0.5;
      return 1;
    }
    case 'boolean':
      return true;
    default:
      return null;
  }
}

const SMALL_STRING = 24;
const SMALL_ARRAY = 3;

/** Valid values of the schema (strings and arrays kept short; free-form objects get a few JSON values). */
export function validOf(schema: Json): fc.Arbitrary<unknown> {
  const alternatives = Array.isArray(schema.anyOf) ? schema.anyOf : Array.isArray(schema.oneOf) ? schema.oneOf : null;
  if (alternatives) return fc.oneof(...alternatives.filter(isObject).map(validOf));
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  if ('const' in schema) return fc.constant(schema.const);
  switch (schema.type) {
    case 'object': {
      const props = isObject(schema.properties) ? schema.properties : {};
      const required = Array.isArray(schema.required) ? schema.required.map(String) : [];
      const model: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [k, v] of Object.entries(props)) if (isObject(v)) model[k] = validOf(v);
      const base = fc.record(model, { requiredKeys: required.filter((k) => k in model) });
      if (schema.additionalProperties !== true) return base;
      return fc.tuple(base, fc.dictionary(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 })).map(([b, extra]) => ({ ...extra, ...b }));
    }
    case 'array': {
      const min = typeof schema.minItems === 'number' ? schema.minItems : 0;
      const max = Math.min(typeof schema.maxItems === 'number' ? schema.maxItems : min + SMALL_ARRAY, min + SMALL_ARRAY);
      return fc.array(isObject(schema.items) ? validOf(schema.items) : fc.jsonValue({ maxDepth: 1 }), { minLength: min, maxLength: max });
    }
    case 'string': {
      if (schema.format === 'uuid') return fc.uuid();
      const min = typeof schema.minLength === 'number' ? schema.minLength : 0;
      const max = Math.min(typeof schema.maxLength === 'number' ? schema.maxLength : min + SMALL_STRING, min + SMALL_STRING);
      return fc.string({ minLength: min, maxLength: max });
    }
    case 'integer': {
      const min = typeof schema.minimum === 'number' ? schema.minimum : typeof schema.exclusiveMinimum === 'number' ? schema.exclusiveMinimum + 1 : -1_000_000;
      const max = typeof schema.maximum === 'number' ? schema.maximum : typeof schema.exclusiveMaximum === 'number' ? schema.exclusiveMaximum - 1 : min + 2_000_000;
      return fc.integer({ min: Math.max(min, Number.MIN_SAFE_INTEGER), max: Math.min(max, Number.MAX_SAFE_INTEGER) });
    }
    case 'number': {
      const min = typeof schema.minimum === 'number' ? schema.minimum : typeof schema.exclusiveMinimum === 'number' ? schema.exclusiveMinimum : -1e6;
      const max = typeof schema.maximum === 'number' ? schema.maximum : 1e6;
      return fc.double({ min, max, noNaN: true, noDefaultInfinity: true, minExcluded: typeof schema.exclusiveMinimum === 'number' });
    }
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

/** Numbers where parsers and bounds break: zero, signs, int32/53-bit edges, huge and tiny doubles. */
export const EDGE_NUMBERS = [0, -0, -1, 0.5, 1e-7, 5e-324, 2 ** 31 - 1, 2 ** 31, 2 ** 32, 2 ** 53 - 1, 2 ** 53 + 2, -(2 ** 53) - 2, 1e21, 1e308, -1e308, 10_000, 10_001];

/** Numbers of the wrong kind: negative, fractional, past every bound, or strings that look like numbers (JSON has no NaN). */
export const wrongNumber: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(-1, -0.5, 1.5, 0.1 + 0.2, -1e308, -(2 ** 63), 2 ** 63, 2 ** 64, Number.MAX_VALUE, Number.MIN_VALUE, 'NaN', 'Infinity', '-Infinity', '1e400', '0x10', '1_000'),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer({ min: -(2 ** 31), max: -1 }),
  fc.bigInt({ min: 2n ** 53n, max: 2n ** 70n }).map((n) => Number(n)),
);

/**
 * Characters no string of the API may carry: NUL, and surrogates without their other half (JSON
 * text escapes them as \ud800). A well-formed pair (an emoji) is valid and is among them to check
 * that it is not refused.
 */
export const BAD_CHARACTERS = ['\u0000', '\ud800', '\udbff', '\udc00', '\udfff', '\ude00\ud83d'];
const GOOD_PAIR = '\ud83d\ude00';

/** s with a bad character (or, now and then, a well-formed pair) put in at some place. */
export function tainted(s: fc.Arbitrary<string>): fc.Arbitrary<string> {
  return fc.tuple(s, fc.nat(), fc.constantFrom(...BAD_CHARACTERS, GOOD_PAIR)).map(([text, at, bad]) => {
    const i = text.length ? at % (text.length + 1) : 0;
    return text.slice(0, i) + bad + text.slice(i);
  });
}

/** Short strings with bad characters, for paths and headers. */
export const shortBadString: fc.Arbitrary<string> = fc.oneof(fc.constantFrom(...BAD_CHARACTERS), tainted(fc.string({ unit: 'grapheme', maxLength: 40 })));

/** Strings of every hostile sort: bad characters, very long ones, both at once. */
export const badString: fc.Arbitrary<string> = fc.oneof(
  shortBadString,
  fc.constantFrom(`${'a'.repeat(255)}\u0000`, `\u0000${'a'.repeat(254)}`),
  fc.integer({ min: 256, max: 20_000 }).chain((n) => tainted(fc.constant('a'.repeat(n)))),
);

/** One nasty value to put in place of a valid one. */
export const nastyValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(null, true, false, '', ' ', '\u0000', 'null', '[]', '{}', [], {}, '__proto__', 'constructor', ...EDGE_NUMBERS),
  badString,
  wrongNumber,
  fc.integer({ min: 8, max: 64 }).map((depth) => nest(depth)),
  fc.string({ unit: 'binary', maxLength: 64 }),
  fc.string({ unit: 'grapheme', maxLength: 64 }),
  fc.integer({ min: 256, max: 400_000 }).map((n) => 'a'.repeat(n)),
  fc.integer({ min: 8, max: 3000 }).map((depth) => nest(depth)),
  fc.integer({ min: 50, max: 12_000 }).chain((n) => fc.constantFrom<unknown>(1, 'x', { part_number: 1, etag: 'x' }, null).map((v) => Array.from({ length: n }, () => v))),
  fc.jsonValue({ maxDepth: 4 }),
  fc.double(),
);

/** [[[...]]] or {"a":{"a":...}}, depth levels deep. */
export function nest(depth: number, kind: 'array' | 'object' = depth % 2 ? 'array' : 'object'): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = kind === 'array' ? [v] : { a: v };
  return v;
}

type PathStep = string | number;

/** Every place in a JSON value where something could be put instead: [] is the value itself. */
function paths(v: unknown, prefix: PathStep[] = [], out: PathStep[][] = [], limit = 64): PathStep[][] {
  if (out.length >= limit) return out;
  out.push(prefix);
  if (Array.isArray(v)) v.slice(0, 8).forEach((x, i) => paths(x, [...prefix, i], out, limit));
  else if (isObject(v)) for (const [k, x] of Object.entries(v)) paths(x, [...prefix, k], out, limit);
  return out;
}

function setAt(v: unknown, path: PathStep[], op: 'replace' | 'delete' | 'add', nasty: unknown, extraKey: string): unknown {
  if (path.length === 0) {
    if (op === 'add' && isObject(v)) return { ...v, [extraKey]: nasty };
    return op === 'delete' ? undefined : nasty;
  }
  const [head, ...rest] = path;
  if (Array.isArray(v) && typeof head === 'number') {
    const copy = [...v];
    if (rest.length === 0 && op === 'delete') copy.splice(head, 1);
    else copy[head] = setAt(copy[head], rest, op, nasty, extraKey);
    return copy;
  }
  if (isObject(v) && typeof head === 'string') {
    const copy: Json = { ...v };
    if (rest.length === 0 && op === 'delete') delete copy[head];
    // defineProperty: a key named __proto__ must stay a plain field, not set the prototype.
    else Object.defineProperty(copy, head, { value: setAt(copy[head], rest, op, nasty, extraKey), enumerable: true, writable: true, configurable: true });
    return copy;
  }
  return v;
}

/** The value with one to three places replaced, removed, or given an extra field. */
export function mutated(valid: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  return valid.chain((v) => {
    const where = paths(v);
    const one = fc.record({
      path: fc.constantFrom(...where),
      op: fc.constantFrom<'replace' | 'delete' | 'add'>('replace', 'replace', 'delete', 'add'),
      nasty: nastyValue,
      extraKey: fc.oneof(fc.string({ maxLength: 16 }), fc.constantFrom('__proto__', 'constructor', 'prototype', 'inputs', 'toString'), tainted(fc.string({ maxLength: 8 }))),
    });
    return fc.array(one, { minLength: 1, maxLength: 3 }).map((changes) => changes.reduce((acc, c) => setAt(acc, c.path, c.op, c.nasty, c.extraKey), v));
  });
}

/** Renames one key of the object at path (keeping its value and place). */
function renameAt(v: unknown, path: PathStep[], rename: (key: string) => string, pick: number): unknown {
  if (path.length === 0) {
    if (!isObject(v)) return v;
    const keys = Object.keys(v);
    const old = keys[pick % Math.max(keys.length, 1)];
    if (old === undefined) return v;
    const out: Json = {};
    for (const [k, x] of Object.entries(v)) Object.defineProperty(out, k === old ? rename(k) : k, { value: x, enumerable: true, writable: true, configurable: true });
    return out;
  }
  const [head, ...rest] = path;
  if (Array.isArray(v) && typeof head === 'number') return v.map((x, i) => (i === head ? renameAt(x, rest, rename, pick) : x));
  if (isObject(v) && typeof head === 'string') return { ...v, [head]: renameAt(v[head], rest, rename, pick) };
  return v;
}

/**
 * The valid value with one string (a value or a key, at any depth) carrying a bad character and
 * nothing else wrong: what reaches past the schema to the services and the database.
 */
export function tainting(valid: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  return valid.chain((v) => {
    const where = paths(v);
    const strings = where.filter((p) => typeof getAt(v, p) === 'string');
    const objects = where.filter((p) => isObject(getAt(v, p)) && Object.keys(getAt(v, p) as Json).length > 0);
    const options: fc.Arbitrary<unknown>[] = [];
    if (strings.length) {
      options.push(
        fc.constantFrom(...strings).chain((p) => tainted(fc.constant(String(getAt(v, p)))).map((bad) => setAt(v, p, 'replace', bad, ''))),
      );
    }
    if (objects.length) {
      options.push(
        fc.tuple(fc.constantFrom(...objects), fc.nat(), fc.constantFrom(...BAD_CHARACTERS)).map(([p, pick, bad]) => renameAt(v, p, (k) => `${k}${bad}`, pick)),
      );
    }
    return options.length ? fc.oneof(...options) : mutated(fc.constant(v));
  });
}

function getAt(v: unknown, path: PathStep[]): unknown {
  let cur = v;
  for (const step of path) {
    if (Array.isArray(cur) && typeof step === 'number') cur = cur[step];
    else if (isObject(cur) && typeof step === 'string') cur = cur[step];
    else return undefined;
  }
  return cur;
}
