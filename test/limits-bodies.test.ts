// Limits I: oversized and hostile request bodies, over real sockets. Every JSON endpoint refuses a
// body over TOOLRUN_BODY_LIMIT_BYTES with 413; a Content-Length over it is refused before a byte
// of body is read and a chunked body is cut off at it; part PUTs are bounded by the part size and
// by what the declared file size leaves, and leave nothing behind; deep or wide JSON is a 4xx, not
// a crash or a stall; compressed bodies are refused (415) without being inflated.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import zlib from 'node:zlib';
import type { ErrorBody } from '../src/core/errors.js';
import { bearer, callApi, makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { RawConnection, type RawResponse } from './helpers/raw-http.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import type { Upload } from './helpers/uploads.js';
import { waitFor } from './helpers/worker.js';

const LIMIT = 256 * 1024;
const PART = 64 * 1024;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
let s: TestServer;
let team: TeamFixture;

before(async () => {
  s = await startTestServer({ env: { TOOLRUN_BODY_LIMIT_BYTES: String(LIMIT), TOOLRUN_PART_SIZE_BYTES: String(PART) } });
  team = await makeTeam(s.database.db, { scopes: ['read', 'run', 'webhooks'], rate: 300 });
});
after(() => s.close());

/**
 * The envelope of a response read off a raw socket (always one answered before its request was
 * read in full: the connection is to be closed), checked like assertError does for inject.
 */
function envelopeOf(res: RawResponse, status: number, code: string): ErrorBody['error'] {
  assert.equal(res.status, status, `expected ${status} ${code}: ${res.body}`);
  assert.equal(res.headers.connection, 'close');
  assert.match(res.headers['content-type'] ?? '', /^application\/json/);
  const body = JSON.parse(res.body) as ErrorBody;
  assert.equal(body.error.code, code);
  assert.match(res.headers['x-request-id'] ?? '', UUID);
  assert.equal(body.error.request_id, res.headers['x-request-id']);
  return body.error;
}

async function assertError(res: Response, status: number, code: string): Promise<ErrorBody['error']> {
  const text = await res.text();
  assert.equal(res.status, status, `expected ${status} ${code}: ${text.slice(0, 500)}`);
  const body = JSON.parse(text) as ErrorBody;
  assert.equal(body.error.code, code);
  assert.equal(body.error.request_id, res.headers.get('x-request-id'));
  return body.error;
}

/** The service still answers: liveness and an authenticated call. */
async function stillAnswers(): Promise<void> {
  assert.equal((await fetch(`${s.url}/healthz`)).status, 200);
  assert.equal((await callApi(s.url, team.key, 'GET', '/v1/me')).status, 200);
}

/** Every operation of the OpenAPI document that may carry a body, with its path ids filled in. */
async function bodyOperations(): Promise<{ method: string; url: string }[]> {
  const doc = (await (await fetch(`${s.url}/v1/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
  const ops: { method: string; url: string }[] = [];
  for (const [p, item] of Object.entries(doc.paths)) {
    for (const method of Object.keys(item)) {
      if (!['post', 'put', 'patch', 'delete'].includes(method)) continue;
      ops.push({ method: method.toUpperCase(), url: p.replace('{tool_id}', 'image_upscale').replace(/\{[a-z_]+\}/g, () => randomUUID()) });
    }
  }
  return ops;
}

/** Sends raw request headers (and optionally a first piece of body) and waits for the answer and the close. */
async function headFirst(head: string, first: Buffer | null = null): Promise<{ res: RawResponse; conn: RawConnection }> {
  const conn = await RawConnection.open(s.url);
  conn.write(head);
  if (first) conn.write(first);
  const res = await waitFor('the answer', async () => conn.response() ?? undefined, 20_000);
  await conn.closedWithin(20_000);
  return { res, conn };
}

/**
 * Sends 16 KiB chunks of a chunked body, up to `max` bytes and never the terminating chunk (only
 * the server can end this), until the server answers or closes.
 */
async function sendChunksUntilAnswered(conn: RawConnection, max: number): Promise<void> {
  const piece = Buffer.alloc(16 * 1024, 0x20);
  const chunk = Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]);
  for (let sent = 0; sent < max && conn.open && !conn.response(); sent += piece.length) {
    conn.write(chunk);
    // A server that stopped reading never drains the socket: look again for its answer meanwhile.
    await new Promise<void>((resolve) => {
      if (!conn.socket.writableNeedDrain) return void setImmediate(resolve);
      const done = () => {
        clearTimeout(timer);
        conn.socket.off('drain', done).off('close', done);
        resolve();
      };
      const timer = setTimeout(done, 50);
      conn.socket.once('drain', done).once('close', done);
    });
  }
}

describe('JSON bodies', () => {
  test('a body one byte over the limit is 413 payload_too_large on every endpoint that takes one; at the limit it is read', async () => {
    const ops = await bodyOperations();
    assert.ok(ops.length >= 8, `operations with bodies: ${ops.map((o) => `${o.method} ${o.url}`).join(', ')}`);
    const over = JSON.stringify({ pad: 'x'.repeat(LIMIT) }).slice(0, LIMIT + 1);
    assert.equal(Buffer.byteLength(over), LIMIT + 1);
    for (const op of ops) {
      const res = await fetch(`${s.url}${op.url}`, { method: op.method, headers: { ...bearer(team.key), 'content-type': 'application/json' }, body: over });
      await assertError(res, 413, 'payload_too_large');
      assert.equal(res.headers.get('connection'), 'close', `${op.method} ${op.url}`);
    }
    // Exactly at the limit: read and parsed (then refused on its content, not its size).
    const at = JSON.stringify({ pad: 'x'.repeat(LIMIT - 10) });
    assert.equal(Buffer.byteLength(at), LIMIT);
    const atLimit = await fetch(`${s.url}/v1/tools/image_upscale/estimate`, { method: 'POST', headers: { ...bearer(team.key), 'content-type': 'application/json' }, body: at });
    const err = await assertError(atLimit, 422, 'invalid_request');
    assert.ok(err.errors?.some((e) => e.code === 'unknown_field' && JSON.stringify(e.loc) === '["body","pad"]'), JSON.stringify(err.errors));
  });

  test('a Content-Length over the limit is refused before any body is sent, and the connection closed', async () => {
    const { res } = await headFirst(
      `POST /v1/tools/image_upscale/estimate HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${team.key}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${100 * 1024 * 1024}\r\n\r\n`,
    );
    envelopeOf(res, 413, 'payload_too_large');
  });

  test('a chunked body with no length is cut off at the limit: answered 413 and closed while the client is still sending', async () => {
    const conn = await RawConnection.open(s.url);
    conn.write(
      `POST /v1/files/upload-url HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${team.key}\r\n` +
        'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n',
    );
    await sendChunksUntilAnswered(conn, 64 * LIMIT);
    const res = await waitFor('the 413', async () => conn.response() ?? undefined, 20_000);
    envelopeOf(res, 413, 'payload_too_large');
    await conn.closedWithin(20_000);
    await stillAnswers();
  });

  test('100,000 levels of nesting, balanced or not, anywhere in the body, are a 422 too_deep; 64 levels are parsed', async () => {
    const depth = 100_000;
    const deep = '['.repeat(depth) + ']'.repeat(depth);
    const bodies: [string, string][] = [
      ['/v1/tools/image_upscale/estimate', deep],
      ['/v1/tools/image_upscale/estimate', `{"inputs":{"image":${deep}}}`],
      // Start run hashes its body for idempotency: it must never walk 100,000 levels.
      ['/v1/tools/image_upscale/runs', `{"inputs":{"image":${deep}}}`],
      ['/v1/files/upload-url', '['.repeat(depth * 2)],
      ['/v1/webhook-endpoints', `{"url":"https://example.com/h","events":${deep}}`],
      // Brackets inside strings do not count: this one is shallow, and only its content is wrong.
      ['/v1/files/upload-url', JSON.stringify({ file_name: '['.repeat(depth), mime_type: 'x', size_bytes: 1 })],
    ];
    for (const [i, [url, body]] of bodies.entries()) {
      const res = await fetch(`${s.url}${url}`, { method: 'POST', headers: { ...bearer(team.key), 'content-type': 'application/json' }, body });
      const err = await assertError(res, 422, 'invalid_request');
      const want = i === bodies.length - 1 ? { loc: ['body', 'file_name'], code: 'too_long' } : { loc: ['body'], code: 'too_deep' };
      assert.deepEqual(err.errors?.map((e) => ({ loc: e.loc, code: e.code })), [want], `${url} ${body.slice(0, 30)}`);
    }
    const at64 = '['.repeat(64) + ']'.repeat(64);
    const shallow = await fetch(`${s.url}/v1/files/upload-url`, { method: 'POST', headers: { ...bearer(team.key), 'content-type': 'application/json' }, body: at64 });
    assert.deepEqual((await assertError(shallow, 422, 'invalid_request')).errors?.map((e) => e.code), ['wrong_type']);
    await stillAnswers();
  });

  test('a body of tens of thousands of keys is a 422 with a bounded errors[], and the process keeps answering', async () => {
    const keys = (prefix: string) => {
      const parts: string[] = [];
      for (let i = 0, size = 2; size < LIMIT - 64; i++) {
        const kv = `"${prefix}${i}":0`;
        parts.push(kv);
        size += kv.length + 1;
      }
      return parts;
    };
    const top = keys('k');
    const inSlots = keys('s');
    assert.ok(top.length > 20_000, `${top.length} keys`);
    for (const [url, body] of [
      ['/v1/tools/image_upscale/estimate', `{${top.join(',')}}`],
      ['/v1/tools/image_upscale/estimate', `{"inputs":{${inSlots.join(',')}}}`],
    ] as const) {
      assert.ok(Buffer.byteLength(body) <= LIMIT);
      const res = await fetch(`${s.url}${url}`, { method: 'POST', headers: { ...bearer(team.key), 'content-type': 'application/json' }, body });
      const err = await assertError(res, 422, 'invalid_request');
      assert.ok(err.errors && err.errors.length >= 1 && err.errors.length <= 100, `${err.errors?.length} entries`);
      assert.ok(['unknown_field', 'unknown_slot'].includes(err.errors[0]!.code ?? ''), JSON.stringify(err.errors[0]));
    }
    await stillAnswers();
  });

  test('gzip and deflate bodies are refused with 415 before they are read: a gzip bomb is never inflated', async () => {
    // 64 MiB of spaces in about 64 KB: well under the limit compressed, 256 times it inflated.
    const bomb = zlib.gzipSync(Buffer.alloc(64 * 1024 * 1024, 0x20), { level: 9 });
    assert.ok(bomb.length < LIMIT, `${bomb.length} bytes`);
    for (const coding of ['gzip', 'deflate', 'br']) {
      // Only the headers and the first KiB go out; the answer comes without the rest.
      const { res } = await headFirst(
        `POST /v1/tools/image_upscale/estimate HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${team.key}\r\n` +
          `Content-Type: application/json\r\nContent-Encoding: ${coding}\r\nContent-Length: ${bomb.length}\r\n\r\n`,
        bomb.subarray(0, 1024),
      );
      const err = envelopeOf(res, 415, 'unsupported_media_type');
      assert.match(err.message, new RegExp(`Content-Encoding: ${coding}`));
    }
    // Sent whole by a client that compresses: the same answer.
    const res = await fetch(`${s.url}/v1/tools/image_upscale/estimate`, {
      method: 'POST',
      headers: { ...bearer(team.key), 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: bomb,
    });
    await assertError(res, 415, 'unsupported_media_type');
    // identity is no compression at all.
    const plain = await callApi(s.url, team.key, 'POST', '/v1/tools/image_upscale/estimate', { inputs: {} }, { 'content-encoding': 'identity' });
    assert.equal(plain.status, 422);
    await stillAnswers();
  });
});

describe('part uploads to local storage', () => {
  async function upload(size: number): Promise<Upload> {
    const res = await callApi(s.url, team.key, 'POST', '/v1/files/upload-url', { file_name: 'a.bin', mime_type: 'image/png', size_bytes: size });
    assert.equal(res.status, 201);
    return (await res.json()) as Upload;
  }
  const partsDir = (u: Upload) => path.join(s.config.dataDir, 'storage', 'uploads', u.upload_id, 'parts');

  test('a Content-Length over the part size is refused before the body is read; nothing is left behind', async () => {
    const u = await upload(3 * PART);
    const url = new URL(u.parts[0]!.url);
    const { res } = await headFirst(`PUT ${url.pathname}${url.search} HTTP/1.1\r\nHost: x\r\nContent-Length: ${PART + 1}\r\n\r\n`);
    const err = envelopeOf(res, 413, 'payload_too_large');
    assert.deepEqual(err.details, { max_bytes: PART });
    assert.deepEqual(fs.readdirSync(partsDir(u)), []);
  });

  test('a chunked part is cut off at the part size; nothing is left behind, and a right-sized PUT then works', async () => {
    const u = await upload(3 * PART);
    const url = new URL(u.parts[1]!.url);
    const conn = await RawConnection.open(s.url);
    conn.write(`PUT ${url.pathname}${url.search} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n`);
    await sendChunksUntilAnswered(conn, 64 * PART);
    const res = await waitFor('the 413', async () => conn.response() ?? undefined, 20_000);
    const err = envelopeOf(res, 413, 'payload_too_large');
    assert.deepEqual(err.details, { max_bytes: PART });
    await conn.closedWithin(20_000);
    await waitFor('the refused part to leave nothing', async () => (fs.readdirSync(partsDir(u)).length === 0 ? true : undefined));
    const ok = await fetch(u.parts[1]!.url, { method: 'PUT', body: new Uint8Array(PART) });
    assert.equal(ok.status, 200);
  });

  test('the last part may hold only what the declared size leaves: one byte more is 413, exactly that is 200', async () => {
    const u = await upload(PART + 10);
    assert.equal(u.parts.length, 2);
    const over = await fetch(u.parts[1]!.url, { method: 'PUT', body: new Uint8Array(11) });
    const err = await assertError(over, 413, 'payload_too_large');
    assert.deepEqual(err.details, { max_bytes: 10 });
    assert.match(err.message, /Part 2 may hold at most 10 bytes/);
    assert.deepEqual(fs.readdirSync(partsDir(u)), []);
    const exact = await fetch(u.parts[1]!.url, { method: 'PUT', body: new Uint8Array(10) });
    assert.equal(exact.status, 200);
    assert.deepEqual(fs.readdirSync(partsDir(u)).filter((n) => /^\d+$/.test(n)), ['2']);
  });

  test('a refused part PUT (bad signature) does not read the body: the connection is closed', async () => {
    const u = await upload(PART);
    const url = new URL(u.parts[0]!.url);
    url.searchParams.set('signature', '0'.repeat(64));
    const { res } = await headFirst(`PUT ${url.pathname}${url.search} HTTP/1.1\r\nHost: x\r\nContent-Length: ${PART}\r\n\r\n`);
    envelopeOf(res, 403, 'signature_invalid');
  });
});

describe('requests without a body', () => {
  // Node marks a request complete only after the handlers its head started return, so a request
  // answered synchronously looked "answered early" and lost its connection (Connection: close).
  test('answered at once (a malformed key\'s 401, GET /v1/me from memory), they keep their connection', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const get = (headers: Record<string, string>) =>
      new Promise<{ status: number | undefined; connection: string | undefined; reused: boolean }>((resolve, reject) => {
        const req = http.get(new URL('/v1/me', s.url), { agent, headers }, (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode, connection: res.headers.connection, reused: req.reusedSocket }));
        });
        req.on('error', reject);
      });
    try {
      const answers = [await get({ authorization: 'Bearer svc_test_short' }), await get(bearer(team.key)), await get(bearer(team.key)), await get(bearer(team.key))];
      assert.deepEqual(answers.map((a) => a.status), [401, 200, 200, 200]);
      assert.deepEqual(answers.map((a) => a.connection), ['keep-alive', 'keep-alive', 'keep-alive', 'keep-alive']);
      assert.deepEqual(answers.map((a) => a.reused), [false, true, true, true]);
    } finally {
      agent.destroy();
    }
  });
});

describe('the server side', () => {
  test('nothing above was a failure of the service: no warning or error was logged', () => {
    const bad = s.logs.lines.filter((l) => (JSON.parse(l) as { level: number }).level >= 40);
    assert.deepEqual(bad, []);
  });
});
