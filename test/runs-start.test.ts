import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createApiKey } from '../src/auth/key-admin.js';
import { runsThisHour } from '../src/runs/repository.js';
import { updateTeam } from '../src/teams/repository.js';
import { builtinTools, createToolRegistry } from '../src/tools/registry.js';
import { assertError } from './helpers/error-envelope.js';
import { makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { makePng } from './helpers/media.js';
import { estimate, insertElement, runOf, start, teamState, uploadReady, call, type Headers } from './helpers/runs.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { testCopy, testPipeline, testTeamOnly, testVoice } from './helpers/test-tools.js';

/**
 * The order of the checks on estimate and start (issue 4): auth, plan, scope, rate limit; 404
 * tool_not_found; 409 tool_execution_pipeline; 403 plan_upgrade_required; 403 consent_required;
 * 422; the hourly ceiling; 402. Each check is met by a request that also fails every later one.
 */

// Two test-only tools that fail two tool checks at once, to pin their order.
const teamPipeline = { ...testPipeline, id: 'test_team_pipeline', productId: 'test_team_pipeline', plans: ['team' as const] };
const teamVoice = { ...testVoice, id: 'test_team_voice', productId: 'test_team_voice', plans: ['team' as const] };
const tools = createToolRegistry([...builtinTools(), testCopy, testPipeline, testTeamOnly, testVoice, teamPipeline, teamVoice]);

let s: TestServer;
let pro: TeamFixture;
let png: Buffer;
let proPng: string;
const db = () => s.database.db;

/** Fails every check from 422 on: unknown and missing slots, an unknown body field, a key too long. */
const BAD_BODY = { inputs: { nope: 1, mode: 'sideways' }, extra: true, duration_seconds: 0 };
const LONG_KEY: Headers = { 'idempotency-key': 'k'.repeat(256) };
const TOOLS_FAILING_LATER = ['no_such_tool', 'test_pipeline', 'test_team_only', 'video_upscale', 'test_copy'];

async function emptyBucket(keyId: string): Promise<void> {
  const { rowCount } = await db().pool.query(
    "UPDATE rate_buckets SET tokens = 0, refilled_at = clock_timestamp() + interval '1 day' WHERE key_id = $1::uuid",
    [keyId],
  );
  assert.equal(rowCount, 1);
}

before(async () => {
  s = await startTestServer({ tools });
  pro = await makeTeam(db(), { plan: 'pro', sparks: 1000, rate: 300 });
  png = await makePng(640, 480);
  proPng = await uploadReady(s, pro.key, png, 'a.png', 'image/png');
});
after(() => s.close());

describe('authentication, plan, scope and rate limit come before anything about the tool', () => {
  test('no key: 401 api_key_required, whatever else is wrong (even a body that is not JSON)', async () => {
    for (const tool of TOOLS_FAILING_LATER) {
      assertError(await estimate(s, null, tool, BAD_BODY, LONG_KEY), 401, 'api_key_required');
      assertError(await start(s, null, tool, BAD_BODY, LONG_KEY), 401, 'api_key_required');
    }
    assertError(await start(s, null, 'no_such_tool', '{"inputs": '), 401, 'api_key_required');
    assertError(await start(s, 'svc_test_notakey', 'no_such_tool', BAD_BODY, LONG_KEY), 401, 'invalid_api_key');
  });

  test('a Free team: 403 plan_upgrade_required before scope; an empty bucket answers 429 first', async () => {
    const free = await makeTeam(db(), { plan: 'pro', sparks: 0, scopes: ['read'] });
    await updateTeam(db().pool, free.teamId, { plan: 'free' });
    for (const tool of TOOLS_FAILING_LATER) {
      const e = assertError(await start(s, free.key, tool, BAD_BODY, LONG_KEY), 403, 'plan_upgrade_required');
      assert.equal(e.details?.plan, 'free');
      assertError(await estimate(s, free.key, tool, BAD_BODY), 403, 'plan_upgrade_required');
    }
    // The rate applies to every request: over it, the answer is 429 whatever the plan.
    await emptyBucket(free.keyId);
    const e = assertError(await start(s, free.key, 'no_such_tool', BAD_BODY, LONG_KEY), 429, 'rate_limited');
    assert.deepEqual(e.details, { limit_per_minute: 60 });
  });

  test('a read-only key: 403 insufficient_scope on start (required_scope run); estimate needs only read; over the rate, 429 first', async () => {
    const team = await makeTeam(db(), { plan: 'pro', sparks: 100, scopes: ['read'] });
    const proReadOnly = await createApiKey(db(), { memberId: pro.memberId, name: 'read only', scopes: ['read'], rate: 60, envPrefix: 'svc_test_' });
    for (const tool of TOOLS_FAILING_LATER) {
      const e = assertError(await start(s, proReadOnly.key, tool, BAD_BODY, LONG_KEY), 403, 'insufficient_scope');
      assert.deepEqual(e.details, { required_scope: 'run' });
    }
    const est = await estimate(s, proReadOnly.key, 'test_copy', { inputs: { image: [proPng] } });
    assert.equal(est.statusCode, 200, est.body);
    assert.equal(est.json<{ sparks: number }>().sparks, 3);
    // The rate before the scope: with an empty bucket the answer is 429, not the scope.
    await emptyBucket(team.keyId);
    const e = assertError(await start(s, team.key, 'no_such_tool', BAD_BODY, LONG_KEY), 429, 'rate_limited');
    assert.deepEqual(e.details, { limit_per_minute: 60 });
  });

  test('over the key rate: 429 rate_limited (limit_per_minute) before the tool is looked up', async () => {
    const team = await makeTeam(db(), { plan: 'pro', sparks: 0, rate: 30 });
    await emptyBucket(team.keyId);
    for (const tool of TOOLS_FAILING_LATER) {
      for (const res of [await start(s, team.key, tool, BAD_BODY, LONG_KEY), await estimate(s, team.key, tool, BAD_BODY)]) {
        const e = assertError(res, 429, 'rate_limited');
        assert.deepEqual(e.details, { limit_per_minute: 30 });
        assert.match(String(res.headers['retry-after']), /^[1-9]\d*$/);
      }
    }
  });
});

describe('then the tool: 404, 409, 403 plan, 403 consent', () => {
  test('an unknown tool: 404 tool_not_found before any body or header problem', async () => {
    for (const send of [estimate, start]) {
      assertError(await send(s, pro.key, 'no_such_tool', BAD_BODY, LONG_KEY), 404, 'tool_not_found');
      assertError(await send(s, pro.key, 'no_such_tool', { inputs: [1, 2] }, LONG_KEY), 404, 'tool_not_found');
      assertError(await send(s, pro.key, 'no_such_tool', '{"inputs": '), 404, 'tool_not_found');
      // The longest id the router takes (100 characters) names no tool: 404, not a 422 on the path.
      assertError(await send(s, pro.key, 't'.repeat(100), { inputs: {} }), 404, 'tool_not_found');
    }
  });

  test('over a real socket too: the 404 comes before the body is read, and the connection stays usable', async () => {
    const big = JSON.stringify({ inputs: { url: 'x'.repeat(200_000) }, extra: true });
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${s.url}/v1/tools/no_such_tool/runs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${pro.key}`, 'content-type': 'application/json' },
        body: big,
      });
      assert.equal(res.status, 404);
      const body = (await res.json()) as { error: { code: string; request_id: string } };
      assert.equal(body.error.code, 'tool_not_found');
      assert.equal(body.error.request_id, res.headers.get('x-request-id'));
    }
    const ok = await fetch(`${s.url}/v1/tools/test_copy/estimate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${pro.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: { image: [proPng] } }),
    });
    assert.equal(ok.status, 200);
  });

  test('a pipeline tool is not listed, and answers 409 tool_execution_pipeline before plan and inputs', async () => {
    const list = await call(s, pro.key, 'GET', '/v1/tools');
    assert.equal(list.statusCode, 200);
    const ids = list.json<{ data: { id: string }[] }>().data.map((t) => t.id);
    assert.ok(ids.includes('test_copy'));
    assert.ok(!ids.includes('test_pipeline') && !ids.includes('test_team_pipeline'), ids.join(','));
    for (const send of [estimate, start]) {
      assertError(await send(s, pro.key, 'test_pipeline', BAD_BODY, LONG_KEY), 409, 'tool_execution_pipeline');
      assertError(await send(s, pro.key, 'test_pipeline', { inputs: { image: [proPng] } }), 409, 'tool_execution_pipeline');
      // Pipeline and outside the plan: the pipeline answer comes first.
      assertError(await send(s, pro.key, 'test_team_pipeline', BAD_BODY, LONG_KEY), 409, 'tool_execution_pipeline');
    }
    assert.equal((await teamState(db().pool, pro.teamId)).runs, 0);
  });

  test('a tool outside the plan: 403 plan_upgrade_required before consent and inputs', async () => {
    const plus = await makeTeam(db(), { plan: 'plus', sparks: 0 });
    const element = await insertElement(db().pool, pro.teamId, false);
    const voiceBody = { inputs: { voice: [element], mode: 'sideways' } };
    for (const send of [estimate, start]) {
      assertError(await send(s, pro.key, 'test_team_only', BAD_BODY, LONG_KEY), 403, 'plan_upgrade_required');
      assertError(await send(s, pro.key, 'test_team_only', { inputs: { image: [proPng] } }), 403, 'plan_upgrade_required');
      assertError(await send(s, plus.key, 'video_upscale', { inputs: { video: ['nope'] }, duration_seconds: 30 }, LONG_KEY), 403, 'plan_upgrade_required');
      assertError(await send(s, pro.key, 'test_team_voice', voiceBody), 403, 'plan_upgrade_required');
    }
    const e = assertError(await start(s, plus.key, 'video_upscale', {}), 403, 'plan_upgrade_required');
    assert.deepEqual(e.details, { plan: 'plus', required_plans: ['pro', 'team'] });
    // The same tool on a plan that has it gets past the check.
    const team = await makeTeam(db(), { plan: 'team', sparks: 100 });
    const teamPng = await uploadReady(s, team.key, png, 't.png', 'image/png');
    assert.equal((await estimate(s, team.key, 'test_team_only', { inputs: { image: [teamPng] } })).statusCode, 200);
    runOf(await start(s, team.key, 'test_team_only', { inputs: { image: [teamPng] } }));
  });

  test('an element without active consent: 403 consent_required before input validation', async () => {
    const withoutConsent = await insertElement(db().pool, pro.teamId, false);
    const withConsent = await insertElement(db().pool, pro.teamId, true);
    const bad = { inputs: { voice: [withoutConsent], mode: 'sideways', nope: 1 } };
    for (const send of [estimate, start]) {
      const e = assertError(await send(s, pro.key, 'test_voice', bad), 403, 'consent_required');
      assert.deepEqual(e.details, { element_ids: [withoutConsent] });
      // Body-level and header problems are 422s too: consent still answers first.
      assertError(await send(s, pro.key, 'test_voice', { ...bad, extra: true, duration_seconds: -1 }, LONG_KEY), 403, 'consent_required');
      // The same inputs with a consenting element: now the inputs themselves are the problem.
      const res = await send(s, pro.key, 'test_voice', { inputs: { ...bad.inputs, voice: [withConsent] } });
      assertError(res, 422, 'invalid_request');
    }
    // Another team's element (even one without consent) is unknown here: 422, as for a made-up id.
    const otherTeam = await makeTeam(db(), { plan: 'pro', sparks: 0 });
    const foreign = await insertElement(db().pool, otherTeam.teamId, false);
    for (const id of [foreign, '00000000-0000-4000-8000-000000000000']) {
      const res = await estimate(s, pro.key, 'test_voice', { inputs: { image: [proPng], voice: [id] } });
      const e = assertError(res, 422, 'invalid_request');
      assert.deepEqual(e.errors?.map((x) => [x.loc, x.code]), [[['body', 'inputs', 'voice'], 'workspace_asset_not_found']]);
    }
    const ok = await estimate(s, pro.key, 'test_voice', { inputs: { image: [proPng], voice: [withConsent] } });
    assert.equal(ok.statusCode, 200, ok.body);
    assert.equal((await teamState(db().pool, pro.teamId)).runs, 0);
  });
});

function secondsToNextHour(): number {
  const now = Date.now();
  return Math.ceil((Math.ceil(now / 3_600_000) * 3_600_000 - now) / 1000);
}

describe('then the inputs (422), the hourly ceiling (429) and the Sparks (402)', () => {
  test('bad inputs answer 422 even at the hourly ceiling and with no Sparks', async () => {
    const team = await makeTeam(db(), { plan: 'pro', sparks: 3 });
    await updateTeam(db().pool, team.teamId, { runsPerHour: 1 });
    const file = await uploadReady(s, team.key, png, 'a.png', 'image/png');
    runOf(await start(s, team.key, 'test_copy', { inputs: { image: [file] } }));
    for (const send of [estimate, start]) assertError(await send(s, team.key, 'test_copy', { inputs: { image: [file], mode: 'x' } }), 422, 'invalid_request');
  });

  test('the hourly ceiling: 429 rate_limited with limit_per_hour and Retry-After to the next hour, before 402', async () => {
    const team = await makeTeam(db(), { plan: 'pro', sparks: 3 });
    await updateTeam(db().pool, team.teamId, { runsPerHour: 1 });
    const file = await uploadReady(s, team.key, png, 'a.png', 'image/png');
    const first = runOf(await start(s, team.key, 'test_copy', { inputs: { image: [file] } }, { 'idempotency-key': 'first' }));
    const before = await teamState(db().pool, team.teamId);
    assert.equal(before.balance, 0);
    // Over the ceiling and short of Sparks: the ceiling answers.
    const res = await start(s, team.key, 'test_copy', { inputs: { image: [file] } });
    const expected = secondsToNextHour();
    const e = assertError(res, 429, 'rate_limited');
    assert.deepEqual(e.details, { limit_per_minute: 60, limit_per_hour: 1 });
    const retryAfter = String(res.headers['retry-after']);
    assert.match(retryAfter, /^[1-9]\d*$/);
    assert.ok(Number(retryAfter) <= 3600 && Math.abs(Number(retryAfter) - expected) <= 2, `Retry-After ${retryAfter}, next hour in ${expected} s`);
    assert.deepEqual(await teamState(db().pool, team.teamId), before);
    // A repeat of the run already started is not a new run: it is answered, not limited.
    const replay = await start(s, team.key, 'test_copy', { inputs: { image: [file] } }, { 'idempotency-key': 'first' });
    assert.equal(runOf(replay).id, first.id);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    // The ceiling counts new runs; pricing them is still allowed (here 402: the Sparks are held).
    assertError(await estimate(s, team.key, 'test_copy', { inputs: { image: [file] } }), 402, 'insufficient_sparks');
    await db().pool.query("UPDATE runs SET created_at = date_trunc('hour', now(), 'UTC') - interval '1 second' WHERE id = $1::uuid", [first.id]);
    // The last hour's run no longer counts: now the Sparks are what is missing.
    const short = assertError(await start(s, team.key, 'test_copy', { inputs: { image: [file] } }), 402, 'insufficient_sparks');
    assert.deepEqual(short.details, { needed_sparks: 3, available_sparks: 0 });
  });

  test('the ceiling holds under concurrency: 20 parallel starts against runs_per_hour 5 start exactly 5', async () => {
    const team = await makeTeam(db(), { plan: 'pro', sparks: 1000, rate: 300 });
    await updateTeam(db().pool, team.teamId, { runsPerHour: 5 });
    const file = await uploadReady(s, team.key, png, 'a.png', 'image/png');
    const responses = await Promise.all(Array.from({ length: 20 }, () => start(s, team.key, 'test_copy', { inputs: { image: [file] } })));
    assert.equal(responses.filter((r) => r.statusCode === 202).length, 5);
    for (const r of responses.filter((x) => x.statusCode !== 202)) {
      assert.deepEqual(assertError(r, 429, 'rate_limited').details, { limit_per_minute: 300, limit_per_hour: 5 });
    }
    assert.deepEqual(await teamState(db().pool, team.teamId), { balance: 1000 - 5 * 3, runs: 5, ledger: 6, holds: 5 });
  });

  test('the ceiling counts UTC clock hours, whatever time zone the database session uses', async () => {
    const team = await makeTeam(db(), { plan: 'pro', sparks: 1000, rate: 300 });
    const file = await uploadReady(s, team.key, png, 'a.png', 'image/png');
    const [early, late] = [runOf(await start(s, team.key, 'test_copy', { inputs: { image: [file] } })), runOf(await start(s, team.key, 'test_copy', { inputs: { image: [file] } }))];
    // One run a second before this UTC hour began, one a second after it began.
    await db().pool.query(
      `UPDATE runs SET created_at = date_trunc('hour', now(), 'UTC') + CASE WHEN id = $1::uuid THEN interval '-1 second' ELSE interval '1 second' END
        WHERE id = ANY($2::uuid[])`,
      [early.id, [early.id, late.id]],
    );
    // A half-hour offset puts the session's hour boundary 30 minutes away from UTC's, so counting
    // session-local hours would give 0 or 2 here, depending on the minute the test runs.
    const client = await db().pool.connect();
    try {
      for (const zone of ['Asia/Kolkata', 'America/St_Johns', 'UTC']) {
        await client.query(`SET TIME ZONE '${zone}'`);
        assert.equal(await runsThisHour(client, team.teamId), 1, `session time zone ${zone}`);
      }
    } finally {
      await client.query('RESET TIME ZONE').catch(() => undefined);
      client.release();
    }
  });

  test('402 insufficient_sparks with the needed and available amounts; nothing written', async () => {
    const team = await makeTeam(db(), { plan: 'pro', sparks: 5 });
    const file = await uploadReady(s, team.key, png, 'a.png', 'image/png');
    runOf(await start(s, team.key, 'test_copy', { inputs: { image: [file] } }));
    const before = await teamState(db().pool, team.teamId);
    assert.deepEqual(before, { balance: 2, runs: 1, ledger: 2, holds: 1 });
    for (const send of [estimate, start]) {
      const e = assertError(await send(s, team.key, 'test_copy', { inputs: { image: [file] } }), 402, 'insufficient_sparks');
      assert.deepEqual(e.details, { needed_sparks: 3, available_sparks: 2 });
    }
    assert.deepEqual(await teamState(db().pool, team.teamId), before);
  });
});
