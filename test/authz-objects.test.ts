// Object-level authorisation: for every operation that takes an object id (read from the OpenAPI
// document, so a new one is covered as soon as it is documented), another team's real object
// answers exactly like an id that never existed: same status, same body (request id aside, the
// ids themselves masked), same headers (X-Request-Id and Date aside). Checked for the other
// team's owner key and for its read-only, no-webhooks and member keys; and a key refused by scope
// or role is refused the same way whether or not its own team's object exists.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Db } from '../src/db/pool.js';
import type { TeamFixture } from './helpers/fixtures.js';
import { bodySchema, exampleOf } from './helpers/fuzz-schema.js';
import { makePng } from './helpers/media.js';
import { Contract, isObject, operations, type Json, type Operation } from './helpers/openapi-contract.js';
import { closeReceivers, Receiver } from './helpers/receiver.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { extraKey, fullTeam, makeTeamObjects, memberKey, type Key, type TeamObjects } from './helpers/team-objects.js';
import { testRegistry } from './helpers/test-tools.js';

/** Two keys of one kind and one team: one asks for the real object, the other for an unknown id, at once. */
interface Twin {
  label: string;
  keys: [Key, Key];
}

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

const RATE = 30; // one token per take, so the RateLimit headers follow the shared bucket exactly
const tools = testRegistry();
let s: TestServer;
let receiver: Receiver;
let contract: Contract;
let idOps: Operation[];
let A: TeamObjects;
let B: TeamObjects;
const db = (): Db => s.database.db;

/** The path parameters that name a team's object: the uuid ones. */
function idParams(op: Operation): string[] {
  const params = Array.isArray(op.op.parameters) ? op.op.parameters.filter(isObject) : [];
  return params.filter((p) => p.in === 'path' && isObject(p.schema) && p.schema.format === 'uuid').map((p) => String(p.name));
}

/** Real objects of a team for each id parameter (more than one where their state matters). */
function objectsFor(o: TeamObjects, param: string): string[] {
  const byParam: Record<string, string[]> = {
    run_id: [o.run.id, o.queuedRunId],
    asset_id: [o.assetId],
    file_id: [o.fileId, o.uploading.fileId],
    endpoint_id: [o.endpointIds[0] ?? ''],
    delivery_id: [o.deliveryId],
  };
  const ids = byParam[param];
  assert.ok(ids, `no objects known for the id parameter "${param}": add them to objectsFor()`);
  return ids;
}

/** A valid body for the operation, aimed at the target team's objects where a field names one. */
function bodyFor(op: Operation, target: TeamObjects): unknown {
  const schema = bodySchema(op.op);
  if (!schema) return undefined;
  const body = exampleOf(schema);
  if (!isObject(body)) return body;
  if ('upload_id' in body) body.upload_id = target.uploading.uploadId;
  // A change that would show if it went through: pausing the endpoint.
  if (op.method === 'PATCH') body.enabled = false;
  return body;
}

async function send(key: string, method: string, path: string, body: unknown): Promise<Answer> {
  const res = await fetch(`${s.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const answer = { status: res.status, headers: Object.fromEntries(res.headers), body: await res.text() };
  contract.check(method, path, { statusCode: answer.status, headers: answer.headers, body: answer.body });
  return answer;
}

/** What must be identical: status, headers but the request id and date, body but its request id, ids masked. */
function comparable(a: Answer, ids: Record<string, string>): { status: number; headers: Record<string, string>; body: unknown } {
  const { 'x-request-id': requestId, date: _date, ...headers } = a.headers;
  const body = JSON.parse(a.body) as { error?: { request_id?: unknown } };
  assert.ok(body.error, `not an error: ${a.body}`);
  assert.equal(body.error.request_id, requestId);
  delete body.error.request_id;
  let text = JSON.stringify(body);
  for (const [name, id] of Object.entries(ids)) text = text.split(id).join(`<${name}>`);
  return { status: a.status, headers, body: JSON.parse(text) };
}

/** Puts both keys' buckets in the same state, so their RateLimit headers can be compared exactly. */
async function level(twin: Twin): Promise<void> {
  await db().pool.query('UPDATE rate_buckets SET tokens = 20, refilled_at = clock_timestamp(), last_take = 0 WHERE key_id = ANY($1::uuid[])', [
    twin.keys.map((k) => k.keyId),
  ]);
}

/**
 * Sends the two requests at once, each with one of the twin keys, their buckets level. Their
 * RateLimit headers depend on the moment of each bucket read: should a stall put one read a
 * refill tick after the other, the pair is sent again (once) rather than blamed on the ids.
 */
async function pair(twin: Twin, method: string, realPath: string, unknownPath: string, body: unknown): Promise<[Answer, Answer]> {
  for (let attempt = 1; ; attempt++) {
    await level(twin);
    const answers = await Promise.all([send(twin.keys[0].key, method, realPath, body), send(twin.keys[1].key, method, unknownPath, body)]);
    const [real, unknown] = answers;
    const rateHeaders = (a: Answer) => [a.headers['ratelimit-remaining'], a.headers['ratelimit-reset']];
    if (attempt >= 2 || JSON.stringify(rateHeaders(real)) === JSON.stringify(rateHeaders(unknown))) return answers;
  }
}

function pathWith(op: Operation, ids: Record<string, string>): string {
  return op.path.replace(/\{([^}]+)\}/g, (_, name: string) => ids[name] ?? '');
}

/**
 * Every way to fill the operation's ids with the caller's own objects and the target's, with at
 * least one of the target's; each answered like the same request with those ids unknown.
 */
async function compareOp(op: Operation, twin: Twin, own: TeamObjects, target: TeamObjects): Promise<Answer[]> {
  const params = idParams(op);
  let combos: { real: Record<string, string>; unknown: Record<string, string> }[] = [{ real: {}, unknown: {} }];
  for (const p of params) {
    const next: typeof combos = [];
    for (const c of combos) {
      for (const id of objectsFor(own, p)) next.push({ real: { ...c.real, [p]: id }, unknown: { ...c.unknown, [p]: id } });
      for (const id of objectsFor(target, p)) next.push({ real: { ...c.real, [p]: id }, unknown: { ...c.unknown, [p]: randomUUID() } });
    }
    combos = next;
  }
  const answers: Answer[] = [];
  for (const c of combos) {
    const foreign = params.filter((p) => c.real[p] !== c.unknown[p]);
    if (foreign.length === 0) continue; // only the caller's own objects: nothing to compare
    const [real, unknown] = await pair(twin, op.method, pathWith(op, c.real), pathWith(op, c.unknown), bodyFor(op, target));
    const masks = (ids: Record<string, string>) => Object.fromEntries(foreign.map((p) => [p, ids[p] ?? '']));
    assert.deepEqual(
      comparable(real, masks(c.real)),
      comparable(unknown, masks(c.unknown)),
      `${twin.label}: ${op.method} ${op.path} with ${foreign.map((p) => `another team's ${p}`).join(' and ')} differs from an unknown id`,
    );
    answers.push(real);
  }
  return answers;
}

async function twin(label: string, make: (n: number) => Promise<Key>): Promise<Twin> {
  return { label, keys: [await make(1), await make(2)] };
}

let bTwins: Twin[];
let aRestricted: Twin[];

before(async () => {
  receiver = await Receiver.start();
  s = await startTestServer({ tools, env: { TOOLRUN_ALLOW_PRIVATE_NETWORK: '1', TOOLRUN_WORKER_POLL_MS: '200' } });
  const teams: TeamFixture[] = [await fullTeam(db()), await fullTeam(db())];
  [A, B] = (await makeTeamObjects(s, tools, teams, await makePng(64, 48), receiver)) as [TeamObjects, TeamObjects];
  const doc = (await (await fetch(`${s.url}/v1/openapi.json`)).json()) as Json;
  contract = new Contract(doc);
  idOps = operations(doc).filter((op) => idParams(op).length > 0);
  const b = B.team;
  bTwins = [
    await twin("the other team's owner key (every scope)", (n) => extraKey(db(), b, `full ${n}`, ['read', 'run', 'webhooks'], RATE)),
    await twin("the other team's read-only key", (n) => extraKey(db(), b, `read ${n}`, ['read'], RATE)),
    await twin("the other team's key without webhooks", (n) => extraKey(db(), b, `no webhooks ${n}`, ['read', 'run'], RATE)),
    await twin("the other team's member key", (n) => memberKey(db(), b, `member${n}@b.example`, RATE)),
  ];
  aRestricted = [
    await twin("the team's own read-only key", (n) => extraKey(db(), A.team, `read ${n}`, ['read'], RATE)),
    await twin("the team's own member key", (n) => memberKey(db(), A.team, `member${n}@a.example`, RATE)),
  ];
}, { timeout: 180_000 });
after(async () => {
  await s.close();
  await closeReceivers();
});

describe("another team's objects answer exactly like unknown ids", { timeout: 300_000 }, () => {
  test('the document lists the operations that take ids, and objects are known for each id', () => {
    const listed = idOps.map((op) => `${op.method} ${op.path}`).sort();
    // The ones there are today; a new one joins automatically (objectsFor() must know its ids).
    for (const want of ['GET /v1/runs/{run_id}', 'POST /v1/runs/{run_id}/cancel', 'GET /v1/runs/{run_id}/outputs/{asset_id}/url', 'POST /v1/files/{file_id}/complete', 'PATCH /v1/webhook-endpoints/{endpoint_id}', 'DELETE /v1/webhook-endpoints/{endpoint_id}', 'POST /v1/webhook-endpoints/{endpoint_id}/test']) {
      assert.ok(listed.includes(want), `${want} is not among ${JSON.stringify(listed)}`);
    }
    for (const op of idOps) for (const p of idParams(op)) assert.ok(objectsFor(A, p).every(Boolean));
  });

  test("with the other team's owner key: 404 with the object's not-found code, for every operation", async () => {
    const notFound = new Set(['run_not_found', 'output_not_found', 'file_not_found', 'webhook_endpoint_not_found', 'delivery_not_found']);
    for (const op of idOps) {
      const answers = await compareOp(op, bTwins[0] as Twin, B, A);
      assert.ok(answers.length > 0, `${op.method} ${op.path}: nothing compared`);
      for (const a of answers) {
        const code = (JSON.parse(a.body) as { error: { code: string } }).error.code;
        assert.equal(a.status, 404, `${op.method} ${op.path}: ${a.body}`);
        assert.ok(notFound.has(code), `${op.method} ${op.path}: ${code}`);
      }
    }
  });

  test("with the other team's read-only, no-webhooks and member keys: refused the same way as unknown ids", async () => {
    for (const t of bTwins.slice(1)) {
      const codes = new Set<string>();
      for (const op of idOps) {
        for (const a of await compareOp(op, t, B, A)) {
          assert.ok([403, 404].includes(a.status), `${t.label}: ${op.method} ${op.path}: ${a.status} ${a.body}`);
          codes.add((JSON.parse(a.body) as { error: { code: string } }).error.code);
        }
      }
      // Each restricted key meets its restriction somewhere, so both kinds of refusal were compared.
      const refusal = t.label.includes('member') ? 'insufficient_role' : 'insufficient_scope';
      assert.ok(codes.has(refusal), `${t.label}: never refused with ${refusal}: ${[...codes].join(', ')}`);
    }
  });

  test("a key refused by scope or role is refused alike for its own team's object and an unknown id", async () => {
    for (const t of aRestricted) {
      let compared = 0;
      for (const op of idOps) {
        const ids = Object.fromEntries(idParams(op).map((p) => [p, objectsFor(A, p)[0] ?? '']));
        const unknownIds = Object.fromEntries(idParams(op).map((p) => [p, randomUUID()]));
        const [real, unknown] = await pair(t, op.method, pathWith(op, ids), pathWith(op, unknownIds), bodyFor(op, A));
        // Allowed calls legitimately differ (the team's own object is found); refusals must not.
        if (unknown.status !== 403) continue;
        compared++;
        assert.deepEqual(comparable(real, ids), comparable(unknown, unknownIds), `${t.label}: ${op.method} ${op.path}`);
      }
      assert.ok(compared >= 2, `${t.label}: only ${compared} refused operations compared`);
    }
  });

  test("the other team's attempts changed nothing, and the same calls on a team's own objects are not 404", async () => {
    const key = A.team.key;
    const queued = await send(key, 'GET', `/v1/runs/${A.queuedRunId}`, undefined);
    assert.equal((JSON.parse(queued.body) as { status: string }).status, 'queued');
    const list = JSON.parse((await send(key, 'GET', '/v1/webhook-endpoints', undefined)).body) as { data: { id: string; enabled: boolean }[] };
    for (const id of A.endpointIds) assert.equal(list.data.find((e) => e.id === id)?.enabled, true, `endpoint ${id}`);
    const { rows } = await db().pool.query<{ status: string }>('SELECT status FROM files WHERE id = $1::uuid', [A.uploading.fileId]);
    assert.equal(rows[0]?.status, 'uploading');
    // The same operations with B's owner key on B's own objects reach them: the 404s above are not a broken route.
    // DELETE last: it removes the endpoint the other calls use.
    for (const op of [...idOps].sort((x, y) => Number(x.method === 'DELETE') - Number(y.method === 'DELETE'))) {
      const ids = Object.fromEntries(idParams(op).map((p) => [p, objectsFor(B, p)[0] ?? '']));
      const res = await send(B.team.key, op.method, pathWith(op, ids), bodyFor(op, B));
      assert.notEqual(res.status, 404, `${op.method} ${op.path} on the team's own objects: ${res.body}`);
    }
  });
});
