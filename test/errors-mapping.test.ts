// The error vocabulary without a server: the status of every error code, the envelope's exact
// fields, and fieldErrors() turning Ajv's errors (from a real Ajv with the app's options) into
// loc lists with a specific code and message each.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Ajv, type AnySchema } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaValidationError } from 'fastify/types/schema.js';
import { Type } from 'typebox';
import { ERROR_STATUS, envelope, ApiError, invalidRequest } from '../src/core/errors.js';
import { fieldErrors } from '../src/core/validation.js';
import { GOOD_BODY } from './helpers/errors-app.js';
import { CompleteBody } from './helpers/test-routes.js';

const addFormats = addFormatsModule.default;

describe('the error table', () => {
  test('every code of the spec answers the status the spec gives it', () => {
    const spec: Record<string, number> = {
      api_key_required: 401,
      invalid_api_key: 401,
      insufficient_sparks: 402,
      plan_upgrade_required: 403,
      consent_required: 403,
      insufficient_scope: 403,
      tool_not_found: 404,
      run_not_found: 404,
      output_not_found: 404,
      tool_execution_pipeline: 409,
      output_not_ready: 409,
      invalid_request: 422,
      rate_limited: 429,
      internal_error: 500,
      // Required by the Foundation issue beyond the spec's table.
      not_found: 404,
      method_not_allowed: 405,
      payload_too_large: 413,
      unsupported_media_type: 415,
    };
    const table: Record<string, number> = ERROR_STATUS;
    for (const [code, status] of Object.entries(spec)) {
      assert.equal(table[code], status, `status of ${code}`);
      assert.equal(new ApiError(code as keyof typeof ERROR_STATUS, 'x').status, status);
    }
  });

  test('envelope() has exactly the spec fields, nulls where nothing applies', () => {
    assert.deepEqual(envelope(new ApiError('not_found', 'No route.'), 'req-1'), {
      error: { code: 'not_found', message: 'No route.', request_id: 'req-1', errors: null, details: null },
    });
    const err = invalidRequest([{ loc: ['body', 'parts', 0, 'etag'], message: 'is required', code: 'missing' }]);
    assert.equal(err.status, 422);
    assert.deepEqual(envelope(err, 'req-2').error.errors, [{ loc: ['body', 'parts', 0, 'etag'], message: 'is required', code: 'missing' }]);
    assert.equal(envelope(err, 'req-2').error.message, 'Invalid request: body.parts.0.etag: is required');
  });
});

// ---------------------------------------------------------------------------------------------
// fieldErrors(): Ajv's errors, produced by a real Ajv with the app's options, mapped to loc lists.

const ajv = new Ajv({ allErrors: true, removeAdditional: false, coerceTypes: false, useDefaults: true, strict: false });
addFormats(ajv);

function ajvErrors(schema: AnySchema, data: unknown): FastifySchemaValidationError[] {
  const validate = ajv.compile(schema);
  assert.equal(validate(data), false, 'the data must be invalid for this test');
  return validate.errors ?? [];
}

describe('fieldErrors() maps Ajv errors to loc lists', () => {
  test('required -> loc ends with the missing field', () => {
    const errors = ajvErrors(CompleteBody, { parts: [{ part_number: 1, etag: 'e' }] });
    assert.equal(errors[0]?.keyword, 'required');
    assert.deepEqual(fieldErrors(errors, 'body'), [{ loc: ['body', 'upload_id'], message: 'is required', code: 'missing' }]);
  });

  test('additionalProperties -> loc ends with the unknown field', () => {
    const errors = ajvErrors(CompleteBody, { ...GOOD_BODY, webhook: 'https://x' });
    assert.equal(errors[0]?.keyword, 'additionalProperties');
    assert.deepEqual(fieldErrors(errors, 'body'), [{ loc: ['body', 'webhook'], message: 'is not a known field', code: 'unknown_field' }]);
  });

  test('a nested array index /parts/2/etag -> ["body","parts",2,"etag"]', () => {
    const errors = ajvErrors(CompleteBody, { upload_id: 'u', parts: [{ part_number: 1, etag: 'a' }, { part_number: 2, etag: 'b' }, { part_number: 3, etag: '' }] });
    assert.equal(errors[0]?.instancePath, '/parts/2/etag');
    assert.deepEqual(fieldErrors(errors, 'body'), [
      { loc: ['body', 'parts', 2, 'etag'], message: 'must be at least 1 character', code: 'too_short' },
    ]);
  });

  test('params context -> "path", e.g. ["path","run_id"]; querystring -> "query"; headers -> "header"', () => {
    const params = ajvErrors(Type.Object({ run_id: Type.String({ format: 'uuid' }) }), { run_id: 'nope' });
    assert.deepEqual(fieldErrors(params, 'params'), [{ loc: ['path', 'run_id'], message: 'must be a valid uuid', code: 'invalid_format' }]);
    const query = ajvErrors(Type.Object({ order: Type.Union([Type.Literal('asc'), Type.Literal('desc')]) }), { order: 'x' });
    assert.deepEqual(
      fieldErrors(query, 'querystring').map((e) => e.loc),
      [['query', 'order']],
    );
    const headers = ajvErrors(Type.Object({ 'idempotency-key': Type.String({ maxLength: 255 }) }), { 'idempotency-key': 'k'.repeat(256) });
    assert.deepEqual(fieldErrors(headers, 'headers'), [
      { loc: ['header', 'idempotency-key'], message: 'must be at most 255 characters', code: 'too_long' },
    ]);
  });

  test('a hand-written params error in the shape Fastify passes maps to ["path", name]', () => {
    const error: FastifySchemaValidationError = {
      keyword: 'format',
      instancePath: '/run_id',
      schemaPath: '#/properties/run_id/format',
      params: { format: 'uuid' },
      message: 'must match format "uuid"',
    };
    assert.deepEqual(fieldErrors([error], 'params'), [{ loc: ['path', 'run_id'], message: 'must be a valid uuid', code: 'invalid_format' }]);
  });

  test('the root object being the wrong type -> loc [context]', () => {
    assert.deepEqual(fieldErrors(ajvErrors(CompleteBody, [1]), 'body'), [{ loc: ['body'], message: 'must be object', code: 'wrong_type' }]);
  });

  test('each kind of bound gets a specific code', () => {
    const schema = Type.Object(
      {
        n: Type.Integer({ minimum: 1, maximum: 10 }),
        s: Type.String({ maxLength: 3 }),
        list: Type.Array(Type.String(), { minItems: 1 }),
        many: Type.Array(Type.Integer(), { maxItems: 1, uniqueItems: true }),
        choice: Type.Union([Type.Literal('fade'), Type.Literal('wipe')]),
        e: Type.Unsafe<string>({ type: 'string', enum: ['1080p', '4k'] }),
        code: Type.String({ pattern: '^[a-z]+$' }),
        x: Type.Number({ exclusiveMinimum: 0 }),
      },
      { additionalProperties: false },
    );
    const out = fieldErrors(
      ajvErrors(schema, { n: 11, s: 'abcd', list: [], many: [1, 1], choice: 'zoom', e: '8k', code: 'A1', x: 0 }),
      'body',
    );
    const byField = new Map(out.map((e) => [e.loc.slice(1).join('.'), e]));
    assert.equal(byField.get('n')?.code, 'out_of_range');
    assert.equal(byField.get('n')?.message, 'must be <= 10');
    assert.equal(byField.get('s')?.code, 'too_long');
    assert.equal(byField.get('list')?.code, 'too_few');
    assert.equal(byField.get('many')?.code, 'too_many');
    assert.equal(byField.get('e')?.code, 'invalid_choice');
    assert.equal(byField.get('e')?.message, 'must be one of 1080p, 4k');
    assert.equal(byField.get('code')?.code, 'invalid_format');
    assert.equal(byField.get('x')?.code, 'out_of_range');
    assert.equal(byField.get('x')?.message, 'must be > 0');
    // A union of literals reports one entry for the field, not one per branch.
    assert.equal(out.filter((e) => e.loc[1] === 'choice').length, 1);
    assert.equal(byField.get('choice')?.code, 'invalid_choice');
    assert.equal(byField.get('choice')?.message, 'must be one of fade, wipe');
    for (const e of out) assert.equal(e.loc[0], 'body');
  });

  test('a nullable field of the wrong type gets one entry naming both types', () => {
    const schema = Type.Object({ duration_seconds: Type.Union([Type.Number({ exclusiveMinimum: 0 }), Type.Null()]) });
    assert.deepEqual(fieldErrors(ajvErrors(schema, { duration_seconds: 'long' }), 'body'), [
      { loc: ['body', 'duration_seconds'], message: 'must be number or null', code: 'wrong_type' },
    ]);
  });

  test('a nullable field that matched one branch reports only what is wrong inside it', () => {
    const number = Type.Object({ duration_seconds: Type.Union([Type.Number({ exclusiveMinimum: 0 }), Type.Null()]) });
    assert.deepEqual(fieldErrors(ajvErrors(number, { duration_seconds: -1 }), 'body'), [
      { loc: ['body', 'duration_seconds'], message: 'must be > 0', code: 'out_of_range' },
    ]);
    const object = Type.Object({
      inputs: Type.Union([Type.Object({ image: Type.String() }, { additionalProperties: false }), Type.Null()]),
    });
    assert.deepEqual(fieldErrors(ajvErrors(object, { inputs: { image: 'f', extra: 1 } }), 'body'), [
      { loc: ['body', 'inputs', 'extra'], message: 'is not a known field', code: 'unknown_field' },
    ]);
  });

  test('a multi-type keyword names every type', () => {
    const schema = { type: 'object', properties: { v: { type: ['string', 'integer', 'null'] } } };
    assert.deepEqual(fieldErrors(ajvErrors(schema, { v: 1.5 }), 'body'), [
      { loc: ['body', 'v'], message: 'must be string or integer or null', code: 'wrong_type' },
    ]);
  });

  test('JSON-pointer escapes are undone in loc', () => {
    const schema = { type: 'object', properties: { 'a/b': { type: 'string' }, 'c~d': { type: 'string' } } };
    assert.deepEqual(
      fieldErrors(ajvErrors(schema, { 'a/b': 1, 'c~d': 2 }), 'body').map((e) => e.loc),
      [
        ['body', 'a/b'],
        ['body', 'c~d'],
      ],
    );
  });

  test('no usable error still yields one entry at the root', () => {
    assert.deepEqual(fieldErrors([], 'body'), [{ loc: ['body'], message: 'is invalid', code: 'invalid' }]);
  });
});
