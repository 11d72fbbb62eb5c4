// Contract details (issue 13, item 8): errors[].loc ends with the slot or field, the OpenAPI
// document is complete (descriptions, examples that validate, tags, 408, the spec's optional
// fields and bounds), estimate_hint contains what runs cost, a rejected file says why, and
// messages count in the right number and point lost clients at the routes nearest theirs.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { ErrorBody, Loc } from '../src/core/errors.js';
import { builtinTools, estimateHint } from '../src/tools/registry.js';
import { assertError } from './helpers/error-envelope.js';
import { bearer, makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { makeMp4, makePng } from './helpers/media.js';
import { Contract, isObject, type Json } from './helpers/openapi-contract.js';
import { sampleInput, seeded } from './helpers/price-samples.js';
import { RawConnection } from './helpers/raw-http.js';
import { call, estimate, uploadReady } from './helpers/runs.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/** Short enough that a stalled body is answered 408 promptly; nothing here asserts a duration. */
const HEADERS_MS = 1000;
const REQUEST_MS = 1500;
const PATIENCE_MS = 30_000;

let s: TestServer;
let team: TeamFixture;
let doc: Json;
let contract: Contract;
const f = { png: '', mp4: '', mp4b: '' };

before(async () => {
  s = await startTestServer({ env: { TOOLRUN_HEADERS_TIMEOUT_MS: String(HEADERS_MS), TOOLRUN_REQUEST_TIMEOUT_MS: String(REQUEST_MS) } });
  team = await makeTeam(s.database.db, { plan: 'pro', sparks: 100_000, rate: 300, scopes: ['read', 'run', 'webhooks'] });
  const res = await s.app.inject({ method: 'GET', url: '/v1/openapi.json' });
  doc = res.json<Json>();
  contract = new Contract(doc);
  f.png = await uploadReady(s, team.key, await makePng(64, 48), 'a.png', 'image/png');
  const mp4 = await makeMp4({ seconds: 2, width: 160, height: 120, audio: false });
  f.mp4 = await uploadReady(s, team.key, mp4, 'a.mp4', 'video/mp4');
  f.mp4b = await uploadReady(s, team.key, mp4, 'b.mp4', 'video/mp4');
});
after(() => s.close());

function fieldErrorsOf(res: { statusCode: number; body: string }): { loc: Loc; message: string; code: string | null }[] {
  assert.equal(res.statusCode, 422, res.body);
  return (JSON.parse(res.body) as ErrorBody).error.errors ?? [];
}

describe('errors[].loc ends with the slot or field; the message names the item', () => {
  test('a bad item of a media slot: loc is the slot, the message says which item', async () => {
    const cases: [string, unknown, Loc, string, RegExp][] = [
      ['image_upscale', { image: ['abc'] }, ['body', 'inputs', 'image'], 'invalid_id', /^item 1 \(index 0\): must be an id/],
      ['video_transition', { clips: [f.mp4, randomUUID()] }, ['body', 'inputs', 'clips'], 'workspace_asset_not_found', /^item 2 \(index 1\): no such file/],
      ['video_transition', { clips: [f.mp4, f.png] }, ['body', 'inputs', 'clips'], 'wrong_media_kind', /^item 2 \(index 1\): is an image file/],
      ['video_transition', { clips: [f.mp4, f.mp4] }, ['body', 'inputs', 'clips'], 'duplicate', /^item 2 \(index 1\): is listed twice/],
    ];
    for (const [tool, inputs, loc, code, message] of cases) {
      const errors = fieldErrorsOf(await estimate(s, team.key, tool, { inputs }));
      assert.deepEqual(errors.map((e) => [e.loc, e.code]), [[loc, code]], tool);
      assert.match(errors[0]!.message, message);
    }
  });

  test('a bad item of a body list (webhook events): loc is the field', async () => {
    const res = await call(s, team.key, 'POST', '/v1/webhook-endpoints', { url: 'https://example.com/hook', events: ['run.failed', 'run.started'] });
    const errors = fieldErrorsOf(res);
    assert.deepEqual(errors.map((e) => [e.loc, e.code]), [[['body', 'events'], 'invalid_choice']]);
    assert.match(errors[0]!.message, /^item 2 \(index 1\): must be one of run\.succeeded, run\.failed, run\.canceled$/);
  });
});

describe('the OpenAPI document', () => {
  const operations = () => contract.ops.map((o) => ({ ...o, where: `${o.method} ${o.path}` }));
  const schemas = () => (isObject(doc.components) && isObject(doc.components.schemas) ? doc.components.schemas : {});

  test('deleted.deleted is optional with default true (the spec)', () => {
    const deleted = schemas().Deleted;
    assert.ok(isObject(deleted) && isObject(deleted.properties));
    assert.deepEqual(deleted.required, ['object', 'id']);
    assert.deepEqual(deleted.properties.deleted, { type: 'boolean', default: true });
  });

  test('the Idempotency-Key header is documented with maxLength 255', () => {
    const op = contract.find('POST', '/v1/tools/x/runs');
    const params = Array.isArray(op?.op.parameters) ? op.op.parameters : [];
    const key = params.find((p): p is Json => isObject(p) && p.in === 'header' && String(p.name).toLowerCase() === 'idempotency-key');
    assert.ok(key && isObject(key.schema), 'Idempotency-Key parameter');
    assert.equal(key.schema.maxLength, 255);
    assert.equal(key.schema.minLength, 1);
  });

  test('every parameter is described (tool_id included)', () => {
    for (const op of operations()) {
      for (const p of Array.isArray(op.op.parameters) ? op.op.parameters : []) {
        assert.ok(isObject(p) && typeof p.description === 'string' && p.description.length > 10, `${op.where}: ${JSON.stringify(p)}`);
      }
    }
    const estimateOp = contract.find('POST', '/v1/tools/x/estimate');
    const toolId = (estimateOp?.op.parameters as Json[]).find((p) => p.name === 'tool_id');
    assert.match(String(toolId?.description), /GET \/v1\/tools/);
  });

  test('every response has a real description; none says "Default Response"', () => {
    for (const op of operations()) {
      for (const [status, r] of Object.entries(isObject(op.op.responses) ? op.op.responses : {})) {
        assert.ok(isObject(r) && typeof r.description === 'string', `${op.where} ${status}`);
        assert.notEqual(r.description, 'Default Response', `${op.where} ${status}`);
        assert.ok(r.description.length > 10, `${op.where} ${status}: ${r.description}`);
      }
    }
  });

  test('every request body and success response has an example that validates against its schema', () => {
    let checked = 0;
    for (const op of operations()) {
      const media: [string, unknown][] = [];
      if (isObject(op.op.requestBody) && isObject(op.op.requestBody.content)) media.push(['request body', op.op.requestBody.content['application/json']]);
      for (const [status, r] of Object.entries(isObject(op.op.responses) ? op.op.responses : {})) {
        if (status.startsWith('2') && isObject(r) && isObject(r.content)) media.push([status, r.content['application/json'] ?? r.content['text/event-stream']]);
      }
      assert.ok(media.length > 0, `${op.where}: no request body or success response`);
      for (const [what, m] of media) {
        assert.ok(isObject(m), `${op.where} ${what}: no media type`);
        // OpenAPI 3.1 named `examples` (what the docs' samples add) or a single `example`: every one is checked.
        const named = isObject(m.examples) ? Object.entries(m.examples).map(([name, e]) => [name, isObject(e) ? e.value : undefined] as const) : [];
        const examples = named.length ? named : m.example !== undefined ? [['example', m.example] as const] : [];
        assert.ok(examples.length > 0 && examples.every(([, v]) => v !== undefined), `${op.where} ${what}: no example`);
        for (const [name, value] of examples) {
          const errors = contract.schemaErrors(`example ${op.where} ${what} ${name}`, m.schema, value);
          assert.equal(errors, null, `${op.where} ${what}: the example ${name} does not validate: ${errors}`);
          checked++;
        }
      }
    }
    assert.ok(checked >= 20, `only ${checked} examples`);
  });

  test('the examples checker can fail', () => {
    assert.notEqual(contract.schemaErrors('deleted-bad', { $ref: '#/components/schemas/Deleted' }, { object: 'deleted', deleted: 'yes' }), null);
  });

  test('top-level tags list exactly the tags the operations use, each described', () => {
    const used = new Set(operations().flatMap((o) => (Array.isArray(o.op.tags) ? o.op.tags.map(String) : [])));
    assert.ok(Array.isArray(doc.tags), 'no top-level tags');
    const listed = doc.tags.map((t) => (isObject(t) ? t.name : null));
    assert.deepEqual([...listed].sort(), [...used].sort());
    for (const t of doc.tags) assert.ok(isObject(t) && typeof t.description === 'string' && t.description.length > 0, JSON.stringify(t));
  });

  test('408 request_timeout is listed on every operation (headers or a body that do not arrive in time)', () => {
    for (const op of operations()) {
      const r = isObject(op.op.responses) ? op.op.responses['408'] : undefined;
      assert.ok(isObject(r) && isObject(r.content), `${op.where}: no 408`);
      assert.deepEqual(isObject(r.content['application/json']) && r.content['application/json'].schema, { $ref: '#/components/schemas/ErrorResponse' });
      assert.match(String(r.description), /request_timeout/);
    }
  });

  test('a real 408 (a JSON body that stops arriving) matches the document', async () => {
    const url = '/v1/tools/image_upscale/estimate';
    const conn = await RawConnection.open(s.url);
    try {
      const body = JSON.stringify({ inputs: { image: [f.png] } });
      conn.write(
        `POST ${url} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${team.key}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
      );
      await conn.closedWithin(PATIENCE_MS);
      const res = conn.response();
      assert.ok(res, 'an answer before the close');
      assert.equal(res.status, 408, res.body);
      contract.check('POST', url, { statusCode: res.status, headers: res.headers, body: res.body });
    } finally {
      conn.destroy();
    }
  });
});

describe('estimate_hint contains what runs cost', () => {
  test('the cheapest and dearest inputs of each tool are valid, and random valid inputs price within the hint', () => {
    const seed = 20250501;
    const rnd = seeded(seed);
    for (const tool of builtinTools()) {
      const hint = estimateHint(tool);
      assert.deepEqual(tool.validate?.(tool.priceRange.cheapest) ?? [], [], `${tool.id}: the cheapest inputs are refused`);
      assert.deepEqual(tool.validate?.(tool.priceRange.dearest) ?? [], [], `${tool.id}: the dearest inputs are refused`);
      assert.ok(hint.sparks_min >= 1 && hint.sparks_min <= hint.sparks_max, `${tool.id}: ${JSON.stringify(hint)}`);
      let accepted = 0;
      for (let i = 0; i < 3000; i++) {
        const input = sampleInput(tool, rnd);
        if ((tool.validate?.(input) ?? []).length > 0) continue;
        accepted++;
        const price = tool.price(input);
        assert.ok(Number.isSafeInteger(price) && price >= 1, `${tool.id}: price ${price}`);
        assert.ok(
          price >= hint.sparks_min && price <= hint.sparks_max,
          `${tool.id}: ${price} Sparks is outside ${hint.sparks_min}..${hint.sparks_max} (seed ${seed}) for ${JSON.stringify(input)}`,
        );
      }
      assert.ok(accepted >= 500, `${tool.id}: only ${accepted} samples were valid`);
    }
  });

  test('real estimates of real files fall inside the hints GET /v1/tools gives (a files-only brand kit costs 1)', async () => {
    const tools = await call(s, team.key, 'GET', '/v1/tools');
    assert.equal(tools.statusCode, 200, tools.body);
    const hints = new Map(tools.json<{ data: { id: string; estimate_hint: { sparks_min: number; sparks_max: number } }[] }>().data.map((t) => [t.id, t.estimate_hint]));
    const cases: [string, unknown, number | null][] = [
      ['brand_kit_extract', { inputs: { files: [f.png] } }, 1],
      ['brand_kit_extract', { inputs: { url: 'https://example.com', files: [f.png] } }, 6],
      ['image_upscale', { inputs: { image: [f.png] } }, 3],
      ['image_color_grade', { inputs: { image: [f.png] } }, 2],
      ['video_transition', { inputs: { clips: [f.mp4, f.mp4b], duration_seconds: 0.5 } }, 5],
      ['video_upscale', { inputs: { video: [f.mp4], target: '4k', method: 'lanczos' } }, 6],
      // Left out, method is learned for a clip this short: the lanczos price plus its frames through the network.
      ['video_upscale', { inputs: { video: [f.mp4], target: '4k' } }, 7],
      ['video_upscale', { inputs: { video: [f.mp4], method: 'learned' } }, null],
      ['video_upscale', { inputs: { target: '4k' }, duration_seconds: 4 * 3600 }, null],
      ['video_upscale', { inputs: { method: 'learned' }, duration_seconds: 300 }, null],
      ['video_transition', { inputs: { style: 'fade' }, duration_seconds: 4 * 3600 }, null],
    ];
    for (const [tool, body, expected] of cases) {
      const res = await estimate(s, team.key, tool, body);
      assert.equal(res.statusCode, 200, `${tool}: ${res.body}`);
      const { sparks } = res.json<{ sparks: number }>();
      if (expected !== null) assert.equal(sparks, expected, tool);
      const hint = hints.get(tool);
      assert.ok(hint && sparks >= hint.sparks_min && sparks <= hint.sparks_max, `${tool}: ${sparks} outside ${JSON.stringify(hint)}`);
    }
  });
});

describe('a rejected file says why', () => {
  /** Uploads bytes in one part and completes the upload twice; both answers must be alike. */
  async function completeTwice(bytes: Buffer, name: string, mime: string): Promise<Json> {
    const up = await call(s, team.key, 'POST', '/v1/files/upload-url', { file_name: name, mime_type: mime, size_bytes: bytes.length });
    assert.equal(up.statusCode, 201, up.body);
    const upload = up.json<{ file_id: string; upload_id: string; parts: { part_number: number; url: string }[] }>();
    const put = await fetch(upload.parts[0]!.url, { method: 'PUT', body: Uint8Array.from(bytes) });
    assert.equal(put.status, 200);
    const url = `/v1/files/${upload.file_id}/complete`;
    const body = { upload_id: upload.upload_id, parts: [{ part_number: 1, etag: put.headers.get('etag') ?? '' }] };
    const answers: Json[] = [];
    for (let attempt = 0; attempt < 2; attempt++) {
      const res = await call(s, team.key, 'POST', url, body);
      assert.equal(res.statusCode, 200, res.body);
      contract.check('POST', url, res);
      answers.push(res.json<Json>());
    }
    assert.deepEqual(answers[1], answers[0]);
    return answers[0]!;
  }

  test('complete answers a rejected file with its problem (again on a repeat); a ready file has none', async () => {
    const rejected = await completeTwice(Buffer.from('this is not an image\n'.repeat(40)), 'x.png', 'image/png');
    assert.deepEqual(rejected, { object: 'file', id: rejected.id, status: 'rejected', problem: 'unrecognised file type' });
    const ready = await completeTwice(await makePng(8, 8), 'ok.png', 'image/png');
    assert.deepEqual(ready, { object: 'file', id: ready.id, status: 'ready' });
  });
});

describe('messages', () => {
  test('counts in the right number: "1 character", "1 item", "1 byte"', async () => {
    const name = fieldErrorsOf(await call(s, team.key, 'POST', '/v1/files/upload-url', { file_name: '', mime_type: 'image/png', size_bytes: 1 }));
    assert.deepEqual(name.map((e) => [e.loc, e.message]), [[['body', 'file_name'], 'must be at least 1 character']]);
    const events = fieldErrorsOf(await call(s, team.key, 'POST', '/v1/webhook-endpoints', { url: 'https://example.com/hook', events: [] }));
    assert.deepEqual(events.map((e) => [e.loc, e.message]), [[['body', 'events'], 'must have at least 1 item']]);
    const tiny = await startTestServer({ database: s.database, env: { TOOLRUN_MAX_FILE_BYTES: '1' } });
    try {
      const big = fieldErrorsOf(await call(tiny, team.key, 'POST', '/v1/files/upload-url', { file_name: 'a', mime_type: 'image/png', size_bytes: 2 }));
      assert.deepEqual(big.map((e) => [e.loc, e.message]), [[['body', 'size_bytes'], 'must be at most 1 byte']]);
    } finally {
      await tiny.close();
    }
  });

  test('an unknown /v1 route names the nearest routes; a wrong method names the methods the path takes', async () => {
    const id = randomUUID();
    const cases: [string, string, number, string][] = [
      ['GET', `/v1/run/${id}`, 404, `No route GET /v1/run/${id}. Did you mean GET /v1/runs/{run_id}?`],
      ['POST', `/v1/runs/${id}/cancle`, 404, `No route POST /v1/runs/${id}/cancle. Did you mean POST /v1/runs/{run_id}/cancel?`],
      [
        'POST',
        '/v1/tools/image_upscale',
        404,
        'No route POST /v1/tools/image_upscale. Did you mean POST /v1/tools/{tool_id}/estimate or POST /v1/tools/{tool_id}/runs?',
      ],
      ['GET', '/v1/no-such-thing', 404, 'No route GET /v1/no-such-thing. GET /v1/openapi.json lists every route.'],
      ['GET', '/me', 404, 'No route GET /me. Every path starts with /v1. Did you mean GET /v1/me?'],
      [
        'POST',
        `/v1/runs/${id}`,
        405,
        '/v1/runs/{run_id} does not take POST; it takes GET or HEAD. Did you mean POST /v1/runs/{run_id}/cancel?',
      ],
      ['PUT', `/v1/webhook-endpoints/${id}`, 405, '/v1/webhook-endpoints/{endpoint_id} does not take PUT; it takes DELETE or PATCH.'],
    ];
    for (const [method, url, status, message] of cases) {
      const res = await s.app.inject({ method: method as 'GET', url, headers: bearer(team.key) });
      const error = assertError(res, status, status === 404 ? 'not_found' : 'method_not_allowed');
      assert.equal(error.message, message);
    }
  });
});
