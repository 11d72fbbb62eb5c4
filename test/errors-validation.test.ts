// Request validation through the real app and error handler: bodies (malformed, empty, not an
// object, unknown or missing fields, no type coercion, prototype-pollution keys, Content-Type,
// the body size limit, authentication answering first) and path and query parameters, each
// refused as a 4xx envelope whose errors[] name the loc of every problem.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { assertError, assertRequestId } from './helpers/error-envelope.js';
import { BODY_LIMIT, GOOD_BODY, JSON_HEADERS, startErrorsApp, t, team } from './helpers/errors-app.js';
import { bearer } from './helpers/fixtures.js';

before(startErrorsApp);
after(() => t.close());

describe('request bodies through the real error handler', () => {
  test('a valid body passes (the control for the cases below)', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/test/echo', headers: JSON_HEADERS, payload: JSON.stringify(GOOD_BODY) });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { object: 'echo', body: GOOD_BODY });
    assertRequestId(res);
  });

  test('malformed JSON is 422 invalid_request with loc ["body"]', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/test/echo', headers: JSON_HEADERS, payload: '{"upload_id": "u",' });
    const error = assertError(res, 422, 'invalid_request');
    assert.deepEqual(error.errors, [{ loc: ['body'], message: 'is not valid JSON', code: 'malformed_json' }]);
  });

  test('an empty JSON body is 422 with loc ["body"]', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/test/echo', headers: JSON_HEADERS, payload: '' });
    const error = assertError(res, 422, 'invalid_request');
    assert.deepEqual(
      error.errors?.map((e) => e.loc),
      [['body']],
    );
  });

  test('JSON that is not an object is 422 with loc ["body"]', async () => {
    for (const payload of ['[1,2]', 'null', '"text"', '42']) {
      const res = await t.app.inject({ method: 'POST', url: '/test/echo', headers: JSON_HEADERS, payload });
      const error = assertError(res, 422, 'invalid_request');
      assert.deepEqual(error.errors, [{ loc: ['body'], message: 'must be object', code: 'wrong_type' }], payload);
    }
  });

  test('an unknown body field is 422 with loc ["body", field]', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/test/echo',
      headers: JSON_HEADERS,
      payload: JSON.stringify({ ...GOOD_BODY, colour: 'red' }),
    });
    const error = assertError(res, 422, 'invalid_request');
    assert.deepEqual(error.errors, [{ loc: ['body', 'colour'], message: 'is not a known field', code: 'unknown_field' }]);
    assert.equal(error.message, 'Invalid request: body.colour: is not a known field');
  });

  test('an unknown field inside an array item names the item index', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/test/echo',
      headers: JSON_HEADERS,
      payload: JSON.stringify({ upload_id: 'u', parts: [{ part_number: 1, etag: 'e', size: 3 }] }),
    });
    const error = assertError(res, 422, 'invalid_request');
    assert.deepEqual(error.errors, [{ loc: ['body', 'parts', 0, 'size'], message: 'is not a known field', code: 'unknown_field' }]);
  });

  test('a missing field and bad nested items each get one entry with their full loc', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/test/echo',
      headers: JSON_HEADERS,
      payload: JSON.stringify({
        parts: [
          { part_number: 1, etag: 'a' },
          { part_number: 2, etag: 'b' },
          { part_number: 0 },
        ],
      }),
    });
    const error = assertError(res, 422, 'invalid_request');
    assert.deepEqual(
      [...(error.errors ?? [])].sort((a, b) => JSON.stringify(a.loc).localeCompare(JSON.stringify(b.loc))),
      [
        { loc: ['body', 'parts', 2, 'etag'], message: 'is required', code: 'missing' },
        { loc: ['body', 'parts', 2, 'part_number'], message: 'must be >= 1', code: 'out_of_range' },
        { loc: ['body', 'upload_id'], message: 'is required', code: 'missing' },
      ],
    );
    assert.equal(error.message, 'Invalid request: 3 problems; see errors[] for each.');
  });

  test('types are not coerced in bodies: "1" for an integer is refused', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/test/echo',
      headers: JSON_HEADERS,
      payload: JSON.stringify({ upload_id: 'u', parts: [{ part_number: '1', etag: 'e' }] }),
    });
    const error = assertError(res, 422, 'invalid_request');
    assert.deepEqual(error.errors, [{ loc: ['body', 'parts', 0, 'part_number'], message: 'must be integer', code: 'wrong_type' }]);
  });

  test('prototype-pollution keys are refused as malformed JSON, not passed on', async () => {
    for (const payload of [
      '{"__proto__": {"polluted": true}, "upload_id": "u", "parts": [{"part_number": 1, "etag": "e"}]}',
      '{"constructor": {"prototype": {"polluted": true}}, "upload_id": "u", "parts": [{"part_number": 1, "etag": "e"}]}',
    ]) {
      const res = await t.app.inject({ method: 'POST', url: '/test/echo', headers: JSON_HEADERS, payload });
      const error = assertError(res, 422, 'invalid_request');
      assert.deepEqual(error.errors?.[0]?.loc, ['body']);
    }
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  test('a body that is not JSON is 415 unsupported_media_type', async () => {
    for (const contentType of ['application/xml', 'application/x-www-form-urlencoded', 'application/jsonx', 'image/png']) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/test/echo',
        headers: { 'content-type': contentType },
        payload: JSON.stringify(GOOD_BODY),
      });
      assertError(res, 415, 'unsupported_media_type');
    }
  });

  test('a body without Content-Type is 415', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/test/echo', headers: { 'content-type': '' }, payload: JSON.stringify(GOOD_BODY) });
    assertError(res, 415, 'unsupported_media_type');
  });

  test('Content-Type parameters and case are accepted', async () => {
    for (const contentType of ['application/json; charset=utf-8', 'Application/JSON']) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/test/echo',
        headers: { 'content-type': contentType },
        payload: JSON.stringify(GOOD_BODY),
      });
      assert.equal(res.statusCode, 200, `${contentType}: ${res.body}`);
    }
  });

  test(
    'text/plain is 415 unsupported_media_type',
    async () => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/test/echo',
        headers: { 'content-type': 'text/plain' },
        payload: JSON.stringify(GOOD_BODY),
      });
      assertError(res, 415, 'unsupported_media_type');
    },
  );

  test('a body over TOOLRUN_BODY_LIMIT_BYTES is 413 payload_too_large', async () => {
    const big = JSON.stringify({ upload_id: 'x'.repeat(BODY_LIMIT), parts: [{ part_number: 1, etag: 'e' }] });
    assert.ok(Buffer.byteLength(big) > BODY_LIMIT);
    const res = await t.app.inject({ method: 'POST', url: '/test/echo', headers: JSON_HEADERS, payload: big });
    assertError(res, 413, 'payload_too_large');

    // Exactly at the limit is still read (and then validated).
    const filler = 'x'.repeat(BODY_LIMIT - JSON.stringify({ upload_id: '', parts: [{ part_number: 1, etag: 'e' }] }).length);
    const atLimit = JSON.stringify({ upload_id: filler, parts: [{ part_number: 1, etag: 'e' }] });
    assert.equal(Buffer.byteLength(atLimit), BODY_LIMIT);
    const ok = await t.app.inject({ method: 'POST', url: '/test/echo', headers: JSON_HEADERS, payload: atLimit });
    assert.equal(ok.statusCode, 200, ok.body);
  });

  test('a Content-Length that does not match the body is a 4xx in the envelope', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/test/echo',
      headers: { ...JSON_HEADERS, 'content-length': '100' },
      payload: '{}',
    });
    assertError(res, 422, 'invalid_request');
  });

  test('on a route that needs a key, authentication answers before the body is looked at', async () => {
    const malformed = await t.app.inject({ method: 'POST', url: '/test/runs', headers: JSON_HEADERS, payload: '{' });
    assertError(malformed, 401, 'api_key_required');
    const wrongType = await t.app.inject({ method: 'POST', url: '/test/runs', headers: { 'content-type': 'application/xml' }, payload: '<a/>' });
    assertError(wrongType, 401, 'api_key_required');
    const tooBig = await t.app.inject({ method: 'POST', url: '/test/runs', headers: JSON_HEADERS, payload: 'x'.repeat(BODY_LIMIT * 2) });
    assertError(tooBig, 401, 'api_key_required');
    // With a key the body rules apply.
    const withKey = await t.app.inject({ method: 'POST', url: '/test/runs', headers: { ...JSON_HEADERS, ...bearer(team.key) }, payload: '{' });
    const error = assertError(withKey, 422, 'invalid_request');
    assert.deepEqual(error.errors?.[0]?.loc, ['body']);
  });
});

describe('path and query parameters', () => {
  test('a uuid path parameter that is not a uuid is 422 with loc ["path", name]', async () => {
    for (const bad of ['not-a-uuid', '123', '7b0c6a7e-4a51-4b7e-9a3c-0d7c7f2b9c1', '7b0c6a7e4a514b7e9a3c0d7c7f2b9c11x', "1' OR '1'='1"]) {
      const res = await t.app.inject({ method: 'GET', url: `/test/runs/${encodeURIComponent(bad)}` });
      const error = assertError(res, 422, 'invalid_request');
      assert.deepEqual(error.errors, [{ loc: ['path', 'run_id'], message: 'must be a valid uuid', code: 'invalid_format' }], bad);
    }
    const ok = await t.app.inject({ method: 'GET', url: '/test/runs/7b0c6a7e-4a51-4b7e-9a3c-0d7c7f2b9c11' });
    assert.equal(ok.statusCode, 200, ok.body);
  });

  test('an unknown query parameter is ignored', async () => {
    const me = await t.app.inject({ method: 'GET', url: '/v1/me?expand=team&foo=bar', headers: bearer(team.key) });
    assert.equal(me.statusCode, 200, me.body);
    assert.equal(me.json<{ object: string }>().object, 'me');
    const tools = await t.app.inject({ method: 'GET', url: '/v1/tools?limit=2', headers: bearer(team.key) });
    assert.equal(tools.statusCode, 200, tools.body);
    assert.equal(tools.json<{ data: unknown[] }>().data.length, 5);
    const health = await t.app.inject({ method: 'GET', url: '/healthz?verbose=1' });
    assert.equal(health.statusCode, 200);
    const listed = await t.app.inject({ method: 'GET', url: '/test/list?order=asc&page=2' });
    assert.equal(listed.statusCode, 200, listed.body);
    assert.deepEqual(listed.json<{ query: unknown }>().query, { order: 'asc', page: '2' });
  });

  test('a bad value of a known query parameter is 422 with loc ["query", name]', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/test/list?order=sideways' });
    const error = assertError(res, 422, 'invalid_request');
    assert.equal(error.errors?.length, 1);
    assert.deepEqual(error.errors?.[0]?.loc, ['query', 'order']);
  });
});
