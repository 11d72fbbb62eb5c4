// Fuzzing generated from GET /v1/openapi.json: for EVERY operation in the document, fast-check
// makes hostile requests (bodies from the request schema, then broken: wrong types, huge, negative
// and fractional numbers, deep nesting, very long strings, NUL and lone surrogates in any string
// value or key, alone or in an otherwise valid body; Authorization, Content-Type and
// Idempotency-Key variants; path ids of every sort; query strings) and sends them over a real
// socket. Invariants: no 5xx; every answer is one the document gives that operation, its body
// valid against the documented schema, every error in the envelope with request_id equal to
// X-Request-Id; the server stays healthy. Raw malformed HTTP gets a 4xx envelope or a clean close.
//
// FUZZ_RUNS (requests per operation, default 150), FUZZ_SEED (default: random, printed), and
// FUZZ_SHRINK=1 (shrink a failure to its smallest case instead of stopping at the first).
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import type { TeamFixture } from './helpers/fixtures.js';
import { requestArb, strayRequestArb, type FuzzRequest, type FuzzWorld, type ToolSlot } from './helpers/fuzz-requests.js';
import { makePng } from './helpers/media.js';
import { Contract, operations, type Json, type Operation, type ResponseLike } from './helpers/openapi-contract.js';
import { rawExchange, type RawExchange, type RawResponse } from './helpers/raw-exchange.js';
import { closeReceivers, Receiver } from './helpers/receiver.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { extraKey, fullTeam, makeTeamObjects, memberKey, type TeamObjects } from './helpers/team-objects.js';
import { testRegistry } from './helpers/test-tools.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 150);
const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);
/** Bounded whatever FUZZ_RUNS is: requests have their own 60 s limit, the whole run this. */
const TIMEOUT_MS = 180_000 + RUNS * 3_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const tools = testRegistry();
let s: TestServer;
let receiver: Receiver;
let agent: http.Agent;
let contract: Contract;
let ops: Operation[];
let A: TeamObjects;
let B: TeamObjects;
let world: Omit<FuzzWorld, 'key'>;
let opKeys: string[];
let sent = 0;

/** One request on a keep-alive socket; the answer as it came. Times out rather than hang. */
function send(req: FuzzRequest): Promise<ResponseLike> {
  const url = new URL(s.url);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...req.headers };
    if (req.body && !req.chunked) headers['content-length'] = String(req.body.length);
    if (req.chunked) headers['transfer-encoding'] = 'chunked';
    const r = http.request({ host: url.hostname, port: url.port, method: req.method, path: req.path, headers, agent, timeout: 60_000 }, (res) => {
      const chunks: Buffer[] = [];
      // An event stream may never end: its first bytes (the status and headers came before them) are the answer.
      if (String(res.headers['content-type'] ?? '').startsWith('text/event-stream')) {
        res.once('data', (c: Buffer) => {
          resolve({ statusCode: res.statusCode ?? 0, headers: res.headers, body: c.toString('utf8') });
          r.destroy();
        });
        return;
      }
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ statusCode: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    r.on('timeout', () => r.destroy(new Error(`no answer within 60 s to ${req.method} ${req.path.slice(0, 200)}`)));
    r.on('error', reject);
    if (req.body && req.chunked) {
      // Two chunks, so the body really arrives in pieces.
      const half = Math.floor(req.body.length / 2);
      r.write(req.body.subarray(0, half));
      r.end(req.body.subarray(half));
    } else r.end(req.body ?? undefined);
  });
}

function describeRequest(req: FuzzRequest): string {
  const body = req.body ? req.body.subarray(0, 300).toString('utf8') : '';
  return `${req.method} ${req.path.slice(0, 300)} headers=${JSON.stringify(req.headers).slice(0, 400)} body(${req.body?.length ?? 0})=${body}`;
}

/** Answers that belong to no operation but are still the service's: HTTP-level refusals, signed storage URLs. */
function outsideOperations(req: FuzzRequest, res: ResponseLike): boolean {
  const code = (() => {
    try {
      return (JSON.parse(res.body) as { error?: { code?: string } }).error?.code;
    } catch {
      return undefined;
    }
  })();
  // Node refuses a request line it cannot parse (say, a raw non-ASCII byte in the path) before routing.
  if (res.statusCode === 400 && code === 'bad_request') return true;
  if (res.statusCode === 431 && code === 'headers_too_large') return true;
  // The local storage routes answer to their URL's signature, not to a key; they are not in the document.
  return req.path.startsWith('/storage/') && ['signature_invalid', 'url_expired', 'upload_not_found', 'output_not_found', 'payload_too_large'].includes(code ?? '');
}

/** The invariants every answer must hold. */
function check(req: FuzzRequest, res: ResponseLike): void {
  const where = `${describeRequest(req)}\n -> ${res.statusCode} ${res.body.slice(0, 500)}`;
  assert.ok(res.statusCode < 500, `5xx: ${where}`);
  assert.match(String(res.headers['x-request-id'] ?? ''), UUID, `X-Request-Id: ${where}`);
  try {
    // Documented status for the operation, body valid against its schema, request_id = X-Request-Id.
    if (outsideOperations(req, res)) contract.checkErrorEnvelope(req.method, req.path, res);
    else contract.check(req.method, req.path, res);
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${where}`);
  }
}

/** Keeps the fuzzing keys' buckets full: 429s would hide everything behind them (they are still checked). */
async function refill(): Promise<void> {
  await s.database.db.pool.query(
    `UPDATE rate_buckets SET tokens = capacity, refilled_at = clock_timestamp(), last_take = 0
      WHERE key_id IN (SELECT id FROM api_keys WHERE team_id = ANY($1::uuid[]))`,
    [[A.team.teamId, B.team.teamId]],
  );
}

async function assertHealthy(): Promise<void> {
  await refill();
  const key = A.team.key;
  for (const [path, auth] of [['/healthz', false], ['/readyz', false], ['/v1/me', true]] as const) {
    const res = await send({ method: 'GET', path, headers: auth ? { authorization: `Bearer ${key}` } : {}, body: null, chunked: false });
    assert.equal(res.statusCode, 200, `${path} after fuzzing: ${res.statusCode} ${res.body}`);
  }
}

/** Runs the property; returns how many answers of each status it got. */
async function fuzz(arb: fc.Arbitrary<FuzzRequest>, seed: number): Promise<Map<number, number>> {
  const statuses = new Map<number, number>();
  await fc.assert(
    fc.asyncProperty(arb, async (req) => {
      if (++sent % 40 === 0) await refill();
      const res = await send(req);
      statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
      check(req, res);
    }),
    { numRuns: RUNS, seed, endOnFailure: process.env.FUZZ_SHRINK !== '1', verbose: 1 },
  );
  return statuses;
}

const summary = (m: Map<number, number>) => [...m.entries()].sort(([a], [b]) => a - b).map(([k, v]) => `${k}x${v}`).join(' ');

before(async () => {
  receiver = await Receiver.start();
  s = await startTestServer({ tools, env: { TOOLRUN_ALLOW_PRIVATE_NETWORK: '1' } });
  agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  const db = s.database.db;
  const teams: TeamFixture[] = [await fullTeam(db), await fullTeam(db)];
  [A, B] = (await makeTeamObjects(s, tools, teams, await makePng(64, 48), receiver)) as [TeamObjects, TeamObjects];
  const doc = (await (await fetch(`${s.url}/v1/openapi.json`)).json()) as Json;
  contract = new Contract(doc);
  ops = operations(doc);
  const list = (await (await fetch(`${s.url}/v1/tools`, { headers: { authorization: `Bearer ${A.team.key}` } })).json()) as { data: { id: string; inputs: ToolSlot[] }[] };
  // Operations take turns on a dozen keys (a team has at most 25), and every bucket is refilled as
  // the fuzzing goes: rate limits stay out of the way.
  opKeys = [];
  for (let i = 0; i < 12; i++) opKeys.push((await extraKey(db, A.team, `fuzz ${i}`, ['read', 'run', 'webhooks'])).key);
  world = {
    tools: list.data,
    ids: {
      run_id: [A.run.id, A.queuedRunId, B.run.id, B.queuedRunId],
      asset_id: [A.assetId, B.assetId],
      file_id: [A.fileId, A.uploading.fileId, B.fileId, B.uploading.fileId],
      endpoint_id: [...A.endpointIds, ...B.endpointIds],
    },
    uploadIds: [A.uploading.uploadId, B.uploading.uploadId],
    readyFile: A.fileId,
    otherFiles: [A.uploading.fileId, B.fileId],
    otherKeys: [
      B.team.key,
      (await extraKey(db, A.team, 'read only', ['read'])).key,
      (await extraKey(db, A.team, 'no webhooks', ['read', 'run'])).key,
      (await memberKey(db, A.team, 'member@a.example')).key,
    ],
    webhookUrl: receiver.url('/fuzz'),
  };
}, { timeout: 180_000 });
after(async () => {
  agent?.destroy();
  await s?.close();
  await closeReceivers();
});

describe('fuzzing every operation of /v1/openapi.json', { timeout: TIMEOUT_MS }, () => {
  test(`every operation, ${RUNS} hostile requests each (seed ${SEED}; FUZZ_SEED=${SEED} replays)`, async (t) => {
    assert.ok(ops.length >= 15, `only ${ops.length} operations in the document`);
    // DELETE last: it removes the endpoints the other webhook operations aim at.
    const ordered = [...ops].sort((x, y) => Number(x.method === 'DELETE') - Number(y.method === 'DELETE'));
    for (const [i, op] of ordered.entries()) {
      await t.test(`${op.method} ${op.path}`, async (st) => {
        const statuses = await fuzz(requestArb(op, { ...world, key: opKeys[i % opKeys.length] ?? A.team.key }), SEED + i);
        st.diagnostic(`answers: ${summary(statuses)}`);
        // Not all refused at the door: some requests got past the key, the parser and the schema.
        const deep = [...statuses.keys()].filter((code) => ![401, 403, 413, 415, 422, 429].includes(code));
        assert.ok(deep.length > 0, `${op.method} ${op.path}: every answer was a refusal at the door: ${summary(statuses)}`);
        await assertHealthy();
      });
    }
  });

  test('requests to no operation: other methods, mangled and unknown paths', async (t) => {
    t.diagnostic(`answers: ${summary(await fuzz(strayRequestArb(ops, A.team.key), SEED - 1))}`);
    await assertHealthy();
  });
});

interface RawCase {
  name: string;
  chunks: (string | Buffer)[];
  /** Our side ends after writing (the client gives up mid-request). */
  halfClose?: boolean;
  /** The exact answers, in order, as "status code" (code omitted for 2xx); absent: any 4xx envelopes. */
  expect?: string[];
  /** The last answer, when what comes before it may vary. */
  last?: string;
  /** Whether the server must have closed the connection (absent: either). */
  closed?: boolean;
}

describe('raw malformed HTTP over a socket: a 4xx envelope or a clean close, never a 5xx', { timeout: 120_000 }, () => {
  const head = (method: string, path: string, extra = '') =>
    `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${A.team.key}\r\n${extra}`;
  const json = (path: string, body: string, length = Buffer.byteLength(body)) =>
    `${head('POST', path, `Content-Type: application/json\r\nContent-Length: ${length}\r\n`)}\r\n${body}`;
  const healthz = 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';
  const cases = (): RawCase[] => [
    // A body that fails to parse closes the connection after its answer (Fastify's choice: the
    // client may still be sending), so what was pipelined behind it is not answered.
    { name: 'broken JSON with a right Content-Length, a good request behind it', chunks: [json('/v1/files/upload-url', '{"file_name":tru'), healthz], expect: ['422 invalid_request'], closed: true },
    { name: 'pipelined: good, broken JSON, good', chunks: [healthz + json('/v1/files/upload-url', '[1,2') + healthz], expect: ['200', '422 invalid_request'], closed: true },
    { name: 'pipelined: a refused body that parses keeps the connection', chunks: [json('/v1/files/upload-url', '{}') + healthz], expect: ['422 invalid_request', '200'], closed: false },
    { name: 'Content-Length longer than the body, then the client closes its side', chunks: [json('/v1/files/upload-url', '{"file_name":"a"', 500)], halfClose: true, closed: true },
    // The garbage may be refused before the first request's answer is written: then only the 400 comes.
    { name: 'Content-Length shorter than the body: the rest is read as a request, and is not one', chunks: [json('/v1/files/upload-url', '{}', 2), 'garbage that is not HTTP\r\n\r\n'], last: '400 bad_request', closed: true },
    { name: 'a chunked body with a chunk size that is not hex', chunks: [`${head('POST', '/v1/files/upload-url', 'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n')}\r\nzz\r\n{}\r\n0\r\n\r\n`], closed: true },
    { name: 'a chunked body cut off mid-chunk, then the client closes its side', chunks: [`${head('POST', '/v1/files/upload-url', 'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n')}\r\nff\r\n{"file_name":`], halfClose: true, closed: true },
    { name: 'both Content-Length and Transfer-Encoding', chunks: [`${head('POST', '/v1/files/upload-url', 'Content-Type: application/json\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n')}\r\n{}`], expect: ['400 bad_request'], closed: true },
    { name: 'a negative Content-Length', chunks: [json('/v1/files/upload-url', '{}', -1)], expect: ['400 bad_request'], closed: true },
    { name: 'a header line without a colon', chunks: [`${head('GET', '/v1/me', 'this is not a header\r\n')}\r\n`], expect: ['400 bad_request'], closed: true },
    { name: 'headers over 16 KiB', chunks: [`${head('GET', '/v1/me', `X-Pad: ${'a'.repeat(17 * 1024)}\r\n`)}\r\n`], expect: ['431 headers_too_large'], closed: true },
    { name: 'an unknown method', chunks: [`${head('BREW', '/v1/me')}\r\n`], expect: ['400 bad_request'], closed: true },
    { name: 'HTTP/1.1 without Host', chunks: ['GET /v1/me HTTP/1.1\r\n\r\n'], expect: ['400 bad_request'] },
    { name: 'a NUL byte in the path', chunks: [`${head('GET', '/v1/runs/\u0000')}\r\n`], expect: ['400 bad_request'], closed: true },
    { name: 'not HTTP at all (a TLS hello)', chunks: [Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03, 0x0d, 0x0a, 0x0d, 0x0a])], expect: ['400 bad_request'], closed: true },
  ];

  function described(r: RawResponse): string {
    if (r.status < 300) return String(r.status);
    return `${r.status} ${(JSON.parse(r.body) as { error: { code: string } }).error.code}`;
  }

  function checkRaw(c: RawCase, x: RawExchange): void {
    const where = `${c.name}: ${JSON.stringify(x.responses.map((r) => `${r.status} ${r.body.slice(0, 200)}`))} closed=${x.closedByServer}`;
    for (const r of x.responses) {
      assert.ok(r.status < 500, `5xx: ${where}`);
      const res = { statusCode: r.status, headers: r.headers, body: r.body };
      if (r.status >= 400) contract.checkErrorEnvelope('RAW', c.name, res);
      else assert.match(r.headers['x-request-id'] ?? '', UUID, where);
    }
    if (c.expect) assert.deepEqual(x.responses.map(described), c.expect, where);
    if (c.last) assert.equal(x.responses.map(described).at(-1), c.last, where);
    if (c.closed !== undefined) assert.equal(x.closedByServer, c.closed, where);
    // Whatever came back parsed as whole responses: no half-written answer, no stray bytes.
    assert.equal(x.rest, '', `bytes after the last response: ${where}`);
  }

  test('each malformed request', async () => {
    const port = Number(new URL(s.url).port);
    for (const c of cases()) {
      checkRaw(c, await rawExchange(port, c.chunks, { halfClose: c.halfClose }));
    }
    await assertHealthy();
  });
});
