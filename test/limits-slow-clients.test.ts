// Limits II: slow-loris. Clients that drip their headers, stop halfway through them, send a body
// slowly or stop in the middle of it, or sit on an idle keep-alive connection are disconnected
// by the server (with 408 in the envelope where an answer is still possible), while other
// clients are served meanwhile. A part upload, several times larger than a JSON body, has its
// own larger bound, so a slow but steady upload still succeeds. The timeouts are set small here
// (TOOLRUN_HEADERS_TIMEOUT_MS, TOOLRUN_REQUEST_TIMEOUT_MS, TOOLRUN_PART_TIMEOUT_MS,
// TOOLRUN_KEEPALIVE_TIMEOUT_MS); nothing here asserts how long anything took.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config/config.js';
import type { ErrorBody } from '../src/core/errors.js';
import { callApi, makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { drip, pause, RawConnection, type RawResponse } from './helpers/raw-http.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import type { Upload } from './helpers/uploads.js';

const HEADERS_MS = 800;
const REQUEST_MS = 1500;
const PART_MS = 5000;
const KEEPALIVE_MS = 600;
const PART = 64 * 1024;
/** How long a test waits for the server to act: generous, for a loaded machine; never asserted. */
const PATIENCE_MS = 30_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let s: TestServer;
let team: TeamFixture;

before(async () => {
  s = await startTestServer({
    env: {
      TOOLRUN_HEADERS_TIMEOUT_MS: String(HEADERS_MS),
      TOOLRUN_REQUEST_TIMEOUT_MS: String(REQUEST_MS),
      TOOLRUN_PART_TIMEOUT_MS: String(PART_MS),
      TOOLRUN_KEEPALIVE_TIMEOUT_MS: String(KEEPALIVE_MS),
      TOOLRUN_PART_SIZE_BYTES: String(PART),
    },
  });
  team = await makeTeam(s.database.db, { rate: 300 });
});
after(() => s.close());

/** Resolves when the server has closed the connection; fails if it has not within PATIENCE_MS. */
function closedByServer(conn: RawConnection): Promise<void> {
  return conn.closedWithin(PATIENCE_MS);
}

function assertTimeoutEnvelope(res: RawResponse | null): void {
  assert.ok(res, 'a 408 answer before the close');
  assert.equal(res.status, 408, res.body);
  assert.equal(res.headers.connection, 'close');
  const body = JSON.parse(res.body) as ErrorBody;
  assert.equal(body.error.code, 'request_timeout');
  assert.match(res.headers['x-request-id'] ?? '', UUID);
  assert.equal(body.error.request_id, res.headers['x-request-id']);
}

/** Meanwhile, an ordinary client is served. */
async function othersServed(): Promise<void> {
  const res = await callApi(s.url, team.key, 'GET', '/v1/me');
  assert.equal(res.status, 200);
}

const head = (extra = '') => `POST /v1/tools/image_upscale/estimate HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${team.key}\r\nContent-Type: application/json\r\n${extra}`;

describe('headers', () => {
  test('headers dripped a byte at a time are cut off with 408 while other clients are served', async () => {
    const conn = await RawConnection.open(s.url);
    // Some 600 bytes at one per 50 ms would take half a minute; the server does not wait for them.
    const headers = Buffer.from(`${head()}X-Filler: ${'a'.repeat(400)}\r\n\r\n`);
    const dripping = drip(conn, headers, 1, 50);
    await othersServed();
    await closedByServer(conn);
    const sent = await dripping;
    assert.ok(sent < headers.length, `the client was cut off after ${sent} of ${headers.length} bytes`);
    assertTimeoutEnvelope(conn.response());
  });

  test('a client that stops halfway through its headers, and one that never sends a byte, are disconnected', async () => {
    const half = await RawConnection.open(s.url);
    half.write('GET /v1/me HTTP/1.1\r\nHost: x\r\nAuthor');
    const silent = await RawConnection.open(s.url);
    await othersServed();
    await Promise.all([closedByServer(half), closedByServer(silent)]);
    assertTimeoutEnvelope(half.response());
    assertTimeoutEnvelope(silent.response());
  });

  test('headers over 16 KiB are refused with 431 in the envelope', async () => {
    const conn = await RawConnection.open(s.url);
    conn.write(`GET /v1/me HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`);
    await closedByServer(conn);
    const res = conn.response();
    assert.equal(res?.status, 431, res?.body);
    assert.equal((JSON.parse(res.body) as ErrorBody).error.code, 'headers_too_large');
  });
});

describe('bodies', () => {
  test('a JSON body sent slowly is cut off with 408 in the envelope, the request id matching', async () => {
    const conn = await RawConnection.open(s.url);
    const body = Buffer.from(JSON.stringify({ inputs: { pad: 'x'.repeat(200) } }));
    conn.write(`${head(`Content-Length: ${body.length}\r\n`)}\r\n`);
    // One byte every 50 ms: some 11 s for the whole body, far past the request timeout.
    const dripping = drip(conn, body, 1, 50);
    await othersServed();
    await closedByServer(conn);
    assert.ok((await dripping) < body.length);
    assertTimeoutEnvelope(conn.response());
  });

  test('a client that stops in the middle of its body gets 408 and is disconnected', async () => {
    const conn = await RawConnection.open(s.url);
    conn.write(`${head('Content-Length: 100\r\n')}\r\n{"inputs":`);
    await othersServed();
    await closedByServer(conn);
    assertTimeoutEnvelope(conn.response());
  });

  test('a body trickled to a refused request (no key) is not read: answered and closed at once', async () => {
    const conn = await RawConnection.open(s.url);
    conn.write('POST /v1/tools/image_upscale/estimate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{');
    await closedByServer(conn);
    const res = conn.response();
    assert.equal(res?.status, 401);
    assert.equal(res.headers.connection, 'close');
  });
});

describe('connections', () => {
  test('an idle keep-alive connection is closed after the keep-alive timeout; a busy one is reused', async () => {
    const conn = await RawConnection.open(s.url);
    const get = `GET /v1/me HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${team.key}\r\n\r\n`;
    conn.write(get);
    // Two requests on one connection: it is kept alive between them.
    await waitUntil(() => conn.response() !== null);
    const first = conn.response()!;
    assert.equal(first.status, 200);
    conn.write(get);
    await waitUntil(() => conn.received().length > first.length && parseSecond(conn) !== null);
    assert.equal(parseSecond(conn)?.status, 200);
    assert.ok(conn.open, 'kept alive between requests');
    await closedByServer(conn);
  });

  test('200 idle connections do not keep new clients out, and all of them are closed', async () => {
    const idle = await Promise.all(Array.from({ length: 200 }, () => RawConnection.open(s.url)));
    // Half of them sent a partial request line, half nothing at all.
    idle.forEach((c, i) => i % 2 && c.write('GET /v1/m'));
    for (let i = 0; i < 5; i++) await othersServed();
    await Promise.all(idle.map((c) => closedByServer(c)));
    assert.ok(idle.every((c) => !c.open));
    await othersServed();
  });
});

describe('part uploads: their own, larger bound', () => {
  async function upload(size: number): Promise<Upload> {
    const res = await callApi(s.url, team.key, 'POST', '/v1/files/upload-url', { file_name: 'a.png', mime_type: 'image/png', size_bytes: size });
    assert.equal(res.status, 201);
    return (await res.json()) as Upload;
  }
  const partsDir = (u: Upload) => path.join(s.config.dataDir, 'storage', 'uploads', u.upload_id, 'parts');
  const putHead = (u: Upload, n: number, length: number) => {
    const url = new URL(u.parts[n - 1]!.url);
    return `PUT ${url.pathname}${url.search} HTTP/1.1\r\nHost: x\r\nContent-Length: ${length}\r\n\r\n`;
  };

  test('a part sent slowly but steadily, for longer than a JSON body may take, is stored', async () => {
    const u = await upload(PART);
    const conn = await RawConnection.open(s.url);
    conn.write(putHead(u, 1, PART));
    // 16 pieces 150 ms apart: at least 2.4 s in all (by construction), past TOOLRUN_REQUEST_TIMEOUT_MS,
    // so only the part's own bound lets it through.
    const sent = await drip(conn, Buffer.alloc(PART, 7), PART / 16, 150);
    assert.equal(sent, PART);
    await waitUntil(() => conn.response() !== null || !conn.open);
    const res = conn.response();
    assert.equal(res?.status, 200, res?.body);
    assert.match(res.headers.etag ?? '', /^"[0-9a-f]{32}"$/);
    conn.destroy();
  });

  test('a part that stalls mid-body is cut off with 408, and nothing of it is kept', async () => {
    const u = await upload(PART);
    const conn = await RawConnection.open(s.url);
    conn.write(putHead(u, 1, PART));
    conn.write(Buffer.alloc(1000));
    await othersServed();
    await closedByServer(conn);
    assertTimeoutEnvelope(conn.response());
    assert.deepEqual(fs.readdirSync(partsDir(u)), []);
  });

  test('a part trickled without ever stalling is still cut off at the part timeout', async () => {
    const u = await upload(PART);
    const conn = await RawConnection.open(s.url);
    conn.write(putHead(u, 1, PART));
    // 64 bytes every 100 ms: never idle, but 100 s for the part.
    const dripping = drip(conn, Buffer.alloc(PART), 64, 100);
    await closedByServer(conn);
    assert.ok((await dripping) < PART);
    assertTimeoutEnvelope(conn.response());
    assert.deepEqual(fs.readdirSync(partsDir(u)), []);
  });
});

/** The response after the first on the same connection, if complete. */
function parseSecond(conn: RawConnection): RawResponse | null {
  const first = conn.response();
  if (!first) return null;
  const rest = conn.received().subarray(first.length);
  const end = rest.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(rest.subarray(0, end).toString('latin1'))?.[1]);
  return { status, headers: {}, body: '', length: rest.length };
}

async function waitUntil(check: () => boolean): Promise<void> {
  const deadline = Date.now() + PATIENCE_MS;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await pause(20);
  }
}

describe('configuration', () => {
  test('production defaults, and bad values stop start-up naming the variable', () => {
    assert.deepEqual(loadConfig({}).httpTimeouts, { headersMs: 20_000, requestMs: 30_000, partMs: 600_000, keepAliveMs: 72_000 });
    const bad: [Record<string, string>, RegExp][] = [
      [{ TOOLRUN_HEADERS_TIMEOUT_MS: '0' }, /^TOOLRUN_HEADERS_TIMEOUT_MS: must be a whole number from 100/],
      [{ TOOLRUN_REQUEST_TIMEOUT_MS: '5s' }, /^TOOLRUN_REQUEST_TIMEOUT_MS: must be a whole number/],
      [{ TOOLRUN_HEADERS_TIMEOUT_MS: '5000', TOOLRUN_REQUEST_TIMEOUT_MS: '4000' }, /^TOOLRUN_REQUEST_TIMEOUT_MS: must be at least TOOLRUN_HEADERS_TIMEOUT_MS \(5000\)/],
      [{ TOOLRUN_PART_TIMEOUT_MS: '-1' }, /^TOOLRUN_PART_TIMEOUT_MS: /],
      [{ TOOLRUN_KEEPALIVE_TIMEOUT_MS: '99' }, /^TOOLRUN_KEEPALIVE_TIMEOUT_MS: must be a whole number from 100/],
    ];
    for (const [env, message] of bad) {
      assert.throws(() => loadConfig(env), (err: unknown) => err instanceof ConfigError && message.test(err.message), JSON.stringify(env));
    }
  });
});

describe('the server side', () => {
  test('nothing above was a failure of the service: no warning or error was logged', () => {
    const bad = s.logs.lines.filter((l) => (JSON.parse(l) as { level: number }).level >= 40);
    assert.deepEqual(bad, []);
  });
});
