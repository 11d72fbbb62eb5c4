import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createApiKey } from '../src/auth/key-admin.js';
import { ledgerDrift } from '../src/sparks/ledger.js';
import { assertError } from './helpers/error-envelope.js';
import { makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { makePng } from './helpers/media.js';
import { call, runOf, sparksOnMe, start, teamState, uploadReady, type RunJson } from './helpers/runs.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { testRegistry } from './helpers/test-tools.js';

/** Idempotency-Key on start: scoped to the team, one run per key, nothing held twice. No worker runs. */

let s: TestServer;
let team: TeamFixture;
let file: string;
let png: Buffer;
const db = () => s.database.db;
const key = (k: string) => ({ 'idempotency-key': k });

before(async () => {
  s = await startTestServer({ tools: testRegistry() });
  team = await makeTeam(db(), { plan: 'pro', sparks: 1000, rate: 300 });
  png = await makePng(640, 480);
  file = await uploadReady(s, team.key, png, 'a.png', 'image/png');
});
after(() => s.close());

describe('Idempotency-Key', () => {
  test('a repeat answers 202 with the same run and Idempotent-Replayed: true, holding nothing more', async () => {
    const body = { inputs: { image: [file], mode: 'ok', copies: 2 } };
    const first = await start(s, team.key, 'test_copy', body, key('order-1'));
    const run = runOf(first);
    assert.equal(first.headers['idempotent-replayed'], undefined);
    const after = await teamState(db().pool, team.teamId);
    const balance = await sparksOnMe(s, team.key);

    const again = await start(s, team.key, 'test_copy', body, key('order-1'));
    assert.deepEqual(runOf(again), run);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    // The same body with its keys in another order is the same body.
    const reordered = await start(s, team.key, 'test_copy', { inputs: { copies: 2, mode: 'ok', image: [file] } }, key('order-1'));
    assert.equal(runOf(reordered).id, run.id);
    assert.equal(reordered.headers['idempotent-replayed'], 'true');
    assert.deepEqual(await teamState(db().pool, team.teamId), after);
    assert.equal(await sparksOnMe(s, team.key), balance);
  });

  test('a repeat answers with the run in its current state', async () => {
    const body = { inputs: { image: [file] } };
    const run = runOf(await start(s, team.key, 'test_copy', body, key('then-canceled')));
    const canceled = await call(s, team.key, 'POST', `/v1/runs/${run.id}/cancel`);
    assert.equal(canceled.statusCode, 200, canceled.body);
    const again = await start(s, team.key, 'test_copy', body, key('then-canceled'));
    const replayed = runOf(again);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(replayed.id, run.id);
    assert.equal(replayed.status, 'canceled');
    assert.equal(replayed.cost_sparks, 0);
    assert.deepEqual(replayed, canceled.json<RunJson>());
  });

  test('a repeat answers with its run even after an input file has expired', async () => {
    const doomed = await uploadReady(s, team.key, png, 'doomed.png', 'image/png');
    const body = { inputs: { image: [doomed] } };
    const run = runOf(await start(s, team.key, 'test_copy', body, key('doomed')));
    await db().pool.query("UPDATE files SET status = 'expired' WHERE id = $1::uuid", [doomed]);
    assertError(await start(s, team.key, 'test_copy', body), 422, 'invalid_request');
    const again = await start(s, team.key, 'test_copy', body, key('doomed'));
    assert.equal(runOf(again).id, run.id);
    assert.equal(again.headers['idempotent-replayed'], 'true');
  });

  test('the same key with a different body or tool: 422 idempotency_key_reused, nothing written', async () => {
    const file2 = await uploadReady(s, team.key, png, 'b.png', 'image/png');
    const run = runOf(await start(s, team.key, 'test_copy', { inputs: { image: [file] } }, key('reused')));
    const before = await teamState(db().pool, team.teamId);
    const different = [
      ['test_copy', { inputs: { image: [file2] } }],
      ['test_copy', { inputs: { image: [file], copies: 2 } }],
      ['test_copy', { inputs: { image: [file] }, duration_seconds: 10 }],
      ['image_upscale', { inputs: { image: [file] } }],
      ['test_copy', { inputs: { image: [file], mode: 'nonsense' } }],
    ] as const;
    for (const [tool, body] of different) {
      const e = assertError(await start(s, team.key, tool, body, key('reused')), 422, 'idempotency_key_reused');
      assert.deepEqual(e.details, { run_id: run.id });
    }
    assert.deepEqual(await teamState(db().pool, team.teamId), before);
  });

  test('keys are scoped to the team: another team may use the same key; another key of this team replays', async () => {
    const body = { inputs: { image: [file] } };
    const run = runOf(await start(s, team.key, 'test_copy', body, key('shared-key')));
    const other = await makeTeam(db(), { plan: 'pro', sparks: 100 });
    const otherFile = await uploadReady(s, other.key, png, 'a.png', 'image/png');
    const theirs = await start(s, other.key, 'test_copy', { inputs: { image: [otherFile] } }, key('shared-key'));
    assert.notEqual(runOf(theirs).id, run.id);
    assert.equal(theirs.headers['idempotent-replayed'], undefined);
    // Even a body that would be "different" is a first use for the other team.
    const theirsToo = await start(s, other.key, 'test_copy', { inputs: { image: [otherFile] } }, key('order-1'));
    assert.equal(theirsToo.statusCode, 202, theirsToo.body);

    const second = await createApiKey(db(), { memberId: team.memberId, name: 'second', scopes: ['read', 'run'], rate: 60, envPrefix: 'svc_test_' });
    const viaSecond = await start(s, second.key, 'test_copy', body, key('shared-key'));
    assert.equal(runOf(viaSecond).id, run.id);
    assert.equal(viaSecond.headers['idempotent-replayed'], 'true');
    assert.equal(runOf(viaSecond).api_key_id, team.keyId);
  });

  test('20 concurrent starts with one key create exactly one run and one hold', async () => {
    const racer = await makeTeam(db(), { plan: 'pro', sparks: 100, rate: 300 });
    const racerFile = await uploadReady(s, racer.key, png, 'a.png', 'image/png');
    const before = await teamState(db().pool, racer.teamId);
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => start(s, racer.key, 'test_copy', { inputs: { image: [racerFile] } }, key('race'))),
    );
    for (const r of responses) assert.equal(r.statusCode, 202, r.body);
    const ids = new Set(responses.map((r) => r.json<RunJson>().id));
    assert.equal(ids.size, 1);
    assert.equal(responses.filter((r) => r.headers['idempotent-replayed'] === undefined).length, 1);
    assert.equal(responses.filter((r) => r.headers['idempotent-replayed'] === 'true').length, 19);
    assert.deepEqual(await teamState(db().pool, racer.teamId), { balance: before.balance - 3, runs: 1, ledger: before.ledger + 1, holds: 1 });
    assert.deepEqual(await ledgerDrift(db().pool), []);
  });
});
