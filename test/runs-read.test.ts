import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createApiKey } from '../src/auth/key-admin.js';
import type { ErrorBody } from '../src/core/errors.js';
import { ledgerDrift } from '../src/sparks/ledger.js';
import { assertError } from './helpers/error-envelope.js';
import { makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { makePng } from './helpers/media.js';
import { assertFieldErrors, call, finalRun, getRun, runOf, sparksOnMe, start, uploadReady, type RunJson } from './helpers/runs.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { testRegistry } from './helpers/test-tools.js';
import { startTestWorker, waitFor } from './helpers/worker.js';

/**
 * Reading runs, cancel and output URLs. A worker runs only in before(), to make succeeded and
 * failed runs; the tests themselves run without one, so the runs they start stay queued.
 */

const tools = testRegistry();
let s: TestServer;
let a: TeamFixture;
let b: TeamFixture;
let aReadOnly: string;
let png: Buffer;
/** a1 (two outputs), a2 and b1 succeeded; aFailed failed. */
const runs: Record<'a1' | 'a2' | 'b1' | 'aFailed', RunJson> = {} as Record<'a1' | 'a2' | 'b1' | 'aFailed', RunJson>;
const db = () => s.database.db;
const UNKNOWN = '00000000-0000-4000-8000-000000000000';

function outputOf(run: RunJson, i = 0): RunJson['outputs'][number] {
  const o = run.outputs[i];
  assert.ok(o, `run ${run.id} has no output ${i}`);
  return o;
}

const urlOf = (key: string, runId: string, assetId: string) => call(s, key, 'GET', `/v1/runs/${runId}/outputs/${assetId}/url`);

/** A download refused by the storage route: status, code, and request_id equal to X-Request-Id. */
async function assertRefused(res: Response, code: string): Promise<void> {
  assert.equal(res.status, 403);
  const body = (await res.json()) as ErrorBody;
  assert.equal(body.error.code, code);
  assert.equal(body.error.request_id, res.headers.get('x-request-id'));
}

const finished = (key: string, id: string): Promise<RunJson> => finalRun(s, key, id);

before(async () => {
  s = await startTestServer({ tools, env: { TOOLRUN_WORKER_POLL_MS: '200', TOOLRUN_DOWNLOAD_URL_TTL_SECONDS: '10' } });
  a = await makeTeam(db(), { plan: 'pro', sparks: 100, rate: 300 });
  b = await makeTeam(db(), { plan: 'pro', sparks: 100 });
  aReadOnly = (await createApiKey(db(), { memberId: a.memberId, name: 'read only', scopes: ['read'], rate: 300, envPrefix: 'svc_test_' })).key;
  png = await makePng(320, 240);
  const aFile = await uploadReady(s, a.key, png, 'a.png', 'image/png');
  const bFile = await uploadReady(s, b.key, png, 'b.png', 'image/png');
  const worker = await startTestWorker(s, tools);
  try {
    const started = {
      a1: runOf(await start(s, a.key, 'test_copy', { inputs: { image: [aFile], copies: 2 } })),
      a2: runOf(await start(s, a.key, 'test_copy', { inputs: { image: [aFile] } })),
      b1: runOf(await start(s, b.key, 'test_copy', { inputs: { image: [bFile] } })),
      aFailed: runOf(await start(s, a.key, 'test_copy', { inputs: { image: [aFile], mode: 'fail' } })),
    };
    runs.a1 = await finished(a.key, started.a1.id);
    runs.a2 = await finished(a.key, started.a2.id);
    runs.b1 = await finished(b.key, started.b1.id);
    runs.aFailed = await finished(a.key, started.aFailed.id);
    await waitFor('the outputs to be checked', async () => {
      const { rows } = await db().pool.query<{ n: number }>("SELECT count(*)::integer AS n FROM run_outputs WHERE status = 'checking'");
      return rows[0]?.n === 0 ? true : undefined;
    });
  } finally {
    await worker.stop(1000);
  }
  assert.equal(runs.a1.status, 'succeeded', runs.a1.error ?? '');
  assert.equal(runs.a1.outputs.length, 2);
  assert.equal(runs.a2.status, 'succeeded');
  assert.equal(runs.b1.status, 'succeeded');
  assert.equal(runs.aFailed.status, 'failed');
});
after(() => s.close());

describe('GET /v1/runs/{run_id}', () => {
  test("the team's run, with any of its keys (read is enough)", async () => {
    for (const key of [a.key, aReadOnly]) {
      const res = await getRun(s, key, runs.a1.id);
      assert.deepEqual(runOf(res, 200), runs.a1);
    }
  });

  test("another team's run is 404 run_not_found, exactly like an unknown id", async () => {
    const theirs = assertError(await getRun(s, a.key, runs.b1.id), 404, 'run_not_found');
    const unknown = assertError(await getRun(s, a.key, UNKNOWN), 404, 'run_not_found');
    assert.equal(theirs.message.replace(runs.b1.id, '<id>'), unknown.message.replace(UNKNOWN, '<id>'));
    assert.equal(theirs.details, null);
  });

  test('a malformed run id: 422 on ["path","run_id"]', async () => {
    // urn:uuid:... passes Ajv's uuid format but not PostgreSQL's uuid type.
    for (const bad of ['abc', `${UNKNOWN}0`, '1234', `urn:uuid:${UNKNOWN}`, `{${UNKNOWN}}`]) {
      assertFieldErrors(await getRun(s, a.key, bad), [{ loc: ['path', 'run_id'], code: 'invalid_format' }]);
    }
  });
});

describe('POST /v1/runs/{run_id}/cancel', () => {
  test('a queued run: 200 canceled, hold released, cost 0, and a run.canceled event with the run as GET shows it', async () => {
    const file = await uploadReady(s, a.key, png, 'c.png', 'image/png');
    const balance = await sparksOnMe(s, a.key);
    const run = runOf(await start(s, a.key, 'test_copy', { inputs: { image: [file] } }));
    assert.equal(await sparksOnMe(s, a.key), balance - run.cost_sparks);

    const res = await call(s, a.key, 'POST', `/v1/runs/${run.id}/cancel`);
    const canceled = runOf(res, 200);
    assert.equal(canceled.id, run.id);
    assert.equal(canceled.status, 'canceled');
    assert.equal(canceled.cost_sparks, 0);
    assert.deepEqual(canceled.outputs, []);
    assert.ok(canceled.finished_at);
    assert.equal(await sparksOnMe(s, a.key), balance);
    const shown = runOf(await getRun(s, a.key, run.id), 200);
    assert.deepEqual(shown, canceled);

    const { rows: events } = await db().pool.query<{ type: string; payload: unknown; team_id: string }>(
      'SELECT type, payload, team_id FROM run_events WHERE run_id = $1::uuid',
      [run.id],
    );
    assert.equal(events.length, 1);
    assert.equal(events[0]?.type, 'run.canceled');
    assert.equal(events[0]?.team_id, a.teamId);
    assert.deepEqual(events[0]?.payload, shown);

    // Again: 200 with the same run; nothing moves twice.
    const again = await call(s, a.key, 'POST', `/v1/runs/${run.id}/cancel`);
    assert.deepEqual(runOf(again, 200), canceled);
    const { rows: ledger } = await db().pool.query<{ kind: string; amount: number }>(
      'SELECT kind, amount FROM ledger_entries WHERE run_id = $1::uuid ORDER BY kind',
      [run.id],
    );
    assert.deepEqual(ledger, [
      { kind: 'hold', amount: -run.cost_sparks },
      { kind: 'release', amount: run.cost_sparks },
    ]);
    const { rows: count } = await db().pool.query<{ n: number }>('SELECT count(*)::integer AS n FROM run_events WHERE run_id = $1::uuid', [run.id]);
    assert.equal(count[0]?.n, 1);
    assert.equal(await sparksOnMe(s, a.key), balance);
    assert.deepEqual(await ledgerDrift(db().pool), []);
  });

  test('a succeeded or failed run: 409 run_not_cancelable with details.status; the run is unchanged', async () => {
    for (const run of [runs.a1, runs.aFailed]) {
      const e = assertError(await call(s, a.key, 'POST', `/v1/runs/${run.id}/cancel`), 409, 'run_not_cancelable');
      assert.deepEqual(e.details, { status: run.status });
      assert.deepEqual(runOf(await getRun(s, a.key, run.id), 200), run);
    }
  });

  test("cancel needs the run scope; another team's run or an unknown one is 404; a malformed id is 422", async () => {
    const file = await uploadReady(s, a.key, png, 'd.png', 'image/png');
    const run = runOf(await start(s, a.key, 'test_copy', { inputs: { image: [file] } }));
    const e = assertError(await call(s, aReadOnly, 'POST', `/v1/runs/${run.id}/cancel`), 403, 'insufficient_scope');
    assert.deepEqual(e.details, { required_scope: 'run' });
    assertError(await call(s, b.key, 'POST', `/v1/runs/${run.id}/cancel`), 404, 'run_not_found');
    assertError(await call(s, a.key, 'POST', `/v1/runs/${UNKNOWN}/cancel`), 404, 'run_not_found');
    for (const bad of ['nope', `urn:uuid:${run.id}`]) {
      assertFieldErrors(await call(s, a.key, 'POST', `/v1/runs/${bad}/cancel`), [{ loc: ['path', 'run_id'], code: 'invalid_format' }]);
    }
    assert.equal(runOf(await getRun(s, a.key, run.id), 200).status, 'queued');
    assertError(await call(s, a.key, 'POST', `/v1/runs/${runs.b1.id}/cancel`), 404, 'run_not_found');
    assert.equal(runOf(await getRun(s, b.key, runs.b1.id), 200).status, 'succeeded');
  });
});

describe('GET /v1/runs/{run_id}/outputs/{asset_id}/url', () => {
  test('a signed URL that downloads the output with its type, length and file name (read scope is enough)', async () => {
    const out = outputOf(runs.a1, 1);
    for (const key of [a.key, aReadOnly]) {
      const res = await urlOf(key, runs.a1.id, out.asset_id);
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json<{ object: string; asset_id: string; url: string; expires_in_seconds: number }>();
      assert.deepEqual({ ...body, url: '' }, { object: 'output_url', asset_id: out.asset_id, url: '', expires_in_seconds: 10 });
      const dl = await fetch(body.url);
      assert.equal(dl.status, 200);
      assert.equal(dl.headers.get('content-type'), 'image/png');
      assert.equal(Number(dl.headers.get('content-length')), out.size_bytes);
      assert.match(dl.headers.get('content-disposition') ?? '', /filename="copy-2\.png"/);
      assert.equal((await dl.arrayBuffer()).byteLength, out.size_bytes);
    }
  });

  test('the URL works for expires_in_seconds and then fails', async () => {
    const out = outputOf(runs.a1);
    const issuedAt = Date.now();
    const res = await urlOf(a.key, runs.a1.id, out.asset_id);
    const url = new URL(res.json<{ url: string }>().url);
    const expires = Number(url.searchParams.get('expires'));
    assert.ok(Math.abs(expires - (Math.floor(issuedAt / 1000) + 10)) <= 1, `expires ${expires}`);
    assert.equal((await fetch(url)).status, 200);
    const signer = s.localStorage().signer;
    const check = (now: number) => signer.verify('GET', decodeURIComponent(url.pathname), url.searchParams, ['filename', 'type'], now);
    assert.equal(check(expires * 1000 - 1000), 'ok');
    assert.equal(check(expires * 1000), 'expired');
    // The same URL signed 11 s earlier has expired: the storage route refuses it.
    const extra = { filename: url.searchParams.get('filename') ?? '', type: url.searchParams.get('type') ?? '' };
    const old = signer.sign('GET', s.url, decodeURIComponent(url.pathname), 10, extra, Date.now() - 11_000);
    await assertRefused(await fetch(old), 'url_expired');
  });

  test('a tampered URL is refused with 403', async () => {
    const res = await urlOf(a.key, runs.a1.id, outputOf(runs.a1).asset_id);
    const good = res.json<{ url: string }>().url;
    const sig = new URL(good);
    const s0 = sig.searchParams.get('signature') ?? '';
    sig.searchParams.set('signature', (s0[0] === 'a' ? 'b' : 'a') + s0.slice(1));
    await assertRefused(await fetch(sig), 'signature_invalid');
    const renamed = new URL(good);
    renamed.searchParams.set('filename', 'evil.html');
    await assertRefused(await fetch(renamed), 'signature_invalid');
    const later = new URL(good);
    later.searchParams.set('expires', String(Number(later.searchParams.get('expires')) + 3600));
    await assertRefused(await fetch(later), 'signature_invalid');
    // The signature of one output does not open another.
    const other = new URL((await urlOf(a.key, runs.a2.id, outputOf(runs.a2).asset_id)).json<{ url: string }>().url);
    const swapped = new URL(good);
    swapped.pathname = other.pathname;
    await assertRefused(await fetch(swapped), 'signature_invalid');
  });

  test('unknown asset, an asset of another run, or a run without outputs: 404 output_not_found', async () => {
    assertError(await urlOf(a.key, runs.a1.id, UNKNOWN), 404, 'output_not_found');
    assertError(await urlOf(a.key, runs.a1.id, outputOf(runs.a2).asset_id), 404, 'output_not_found');
    assertError(await urlOf(a.key, runs.aFailed.id, outputOf(runs.a1).asset_id), 404, 'output_not_found');
    assertFieldErrors(await urlOf(a.key, runs.a1.id, 'nope'), [{ loc: ['path', 'asset_id'], code: 'invalid_format' }]);
    assertFieldErrors(await urlOf(a.key, 'nope', outputOf(runs.a1).asset_id), [{ loc: ['path', 'run_id'], code: 'invalid_format' }]);
    const urn = (id: string) => `urn:uuid:${id}`;
    assertFieldErrors(await urlOf(a.key, urn(runs.a1.id), outputOf(runs.a1).asset_id), [{ loc: ['path', 'run_id'], code: 'invalid_format' }]);
    assertFieldErrors(await urlOf(a.key, runs.a1.id, urn(outputOf(runs.a1).asset_id)), [{ loc: ['path', 'asset_id'], code: 'invalid_format' }]);
  });

  test("another team's run: 404 run_not_found, even with its own asset id", async () => {
    assertError(await urlOf(a.key, runs.b1.id, outputOf(runs.b1).asset_id), 404, 'run_not_found');
    assertError(await urlOf(a.key, UNKNOWN, outputOf(runs.a1).asset_id), 404, 'run_not_found');
    assert.equal((await urlOf(b.key, runs.b1.id, outputOf(runs.b1).asset_id)).statusCode, 200);
  });

  test("an output still being checked: 409 output_not_ready; past its retention: 404 output_not_found", async () => {
    const out = outputOf(runs.a2);
    const set = (sql: string) => db().pool.query(`UPDATE run_outputs SET ${sql} WHERE id = $1::uuid`, [out.asset_id]);
    try {
      await set("status = 'checking'");
      const res = await urlOf(a.key, runs.a2.id, out.asset_id);
      assertError(res, 409, 'output_not_ready');
      assert.match(String(res.headers['retry-after']), /^[1-9]\d*$/);
      await set("status = 'ready', expires_at = now() - interval '1 second'");
      assertError(await urlOf(a.key, runs.a2.id, out.asset_id), 404, 'output_not_found');
      // Past retention wins over still being checked: the output is gone either way.
      await set("status = 'checking'");
      assertError(await urlOf(a.key, runs.a2.id, out.asset_id), 404, 'output_not_found');
      await set("status = 'expired'");
      assertError(await urlOf(a.key, runs.a2.id, out.asset_id), 404, 'output_not_found');
    } finally {
      await set("status = 'ready', expires_at = now() + interval '1 day'");
    }
    assert.equal((await urlOf(a.key, runs.a2.id, out.asset_id)).statusCode, 200);
  });
});
