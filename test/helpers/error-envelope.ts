import assert from 'node:assert/strict';
import type { OutgoingHttpHeaders } from 'node:http';
import type { LightMyRequestResponse } from 'fastify';
import type { ErrorBody } from '../../src/core/errors.js';

/** What assertError reads: an injected response, or one read off a socket (helpers/socket-request). */
export type AnsweredRequest = Pick<LightMyRequestResponse, 'statusCode' | 'body'> & { headers: OutgoingHttpHeaders; json<T>(): T };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Asserts an error response: the exact status and code, the envelope with exactly the spec's
 * fields, and error.request_id equal to the X-Request-Id header. Returns the parsed body.
 */
export function assertError(res: AnsweredRequest, status: number, code: string): ErrorBody['error'] {
  assert.equal(res.statusCode, status, `expected ${status} ${code}, got ${res.statusCode}: ${res.body}`);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  const body = res.json<ErrorBody>();
  assert.deepEqual(Object.keys(body), ['error']);
  assert.deepEqual(Object.keys(body.error).sort(), ['code', 'details', 'errors', 'message', 'request_id']);
  assert.equal(body.error.code, code);
  assert.equal(typeof body.error.message, 'string');
  assert.ok(body.error.message.length > 0);
  const requestId = res.headers['x-request-id'];
  assert.equal(typeof requestId, 'string');
  assert.match(String(requestId), UUID);
  assert.equal(body.error.request_id, requestId);
  assert.ok(body.error.errors === null || Array.isArray(body.error.errors));
  assert.ok(body.error.details === null || typeof body.error.details === 'object');
  return body.error;
}

export function assertRequestId(res: LightMyRequestResponse): string {
  const requestId = res.headers['x-request-id'];
  assert.equal(typeof requestId, 'string', `no X-Request-Id on ${res.statusCode} ${res.body}`);
  assert.match(String(requestId), UUID);
  return String(requestId);
}
