// Each team's share of a process's held requests (issue 25, item 11): the process's open event
// streams and `Prefer: wait` waiters are bounded per team as well as per key and per process, so
// one team, whatever its number of keys, cannot take every place from the others. Small bounds
// set through the environment: team A fills its share (with two keys, both stream kinds counting
// together) and gets the usual refusal (streams: 429 rate_limited with Retry-After; waiters: the
// run answered at once, without Preference-Applied) while team B still opens streams and waits.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createApiKey } from '../src/auth/key-admin.js';
import { ConfigError, loadConfig } from '../src/config/config.js';
import { assertError } from './helpers/error-envelope.js';
import { bearer, makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { waitFor } from './helpers/process.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { socketRequest } from './helpers/socket-request.js';
import { asAnswer, openStream, type OpenedStream } from './helpers/sse-client.js';
import { testRegistry } from './helpers/test-tools.js';
import { Runs } from './helpers/webhooks.js';
import type { AnsweredRequest } from './helpers/error-envelope.js';

const STREAMS_PER_TEAM = 3;
const WAITERS_PER_TEAM = 2;
let s: TestServer;

before(async () => {
  // No worker: the runs stay queued, so streams and waiters stay open until the runs are canceled.
  s = await startTestServer({
    tools: testRegistry(),
    env: {
      TOOLRUN_STREAMS_PER_PROCESS: '8',
      TOOLRUN_STREAMS_PER_TEAM: String(STREAMS_PER_TEAM),
      TOOLRUN_WAITERS_PER_PROCESS: '8',
      TOOLRUN_WAITERS_PER_TEAM: String(WAITERS_PER_TEAM),
    },
  });
});
after(async () => {
  await s.close();
});

interface Team {
  fixture: TeamFixture;
  /** A second key of the team's owner: the share is the team's, not the key's. */
  second: string;
  runs: Runs;
}

async function team(): Promise<Team> {
  const fixture = await makeTeam(s.database.db, { sparks: 1000, scopes: ['read', 'run', 'webhooks'] });
  const created = await createApiKey(s.database.db, { memberId: fixture.memberId, name: 'second', scopes: ['read', 'run', 'webhooks'], rate: 60, envPrefix: 'svc_test_' });
  return { fixture, second: created.key, runs: await new Runs(s, fixture.key).init() };
}

const runStream = (key: string, runId: string) => openStream(`${s.url}/v1/runs/${runId}/events`, bearer(key));
const teamStream = (key: string) => openStream(`${s.url}/v1/events`, bearer(key));
const waitOn = (key: string, runId: string) =>
  socketRequest(s.url, `/v1/runs/${runId}`, { headers: { ...bearer(key), prefer: 'wait=60' }, timeoutMs: 70_000 });

async function cancel(t: Team, runId: string): Promise<void> {
  const res = await socketRequest(s.url, `/v1/runs/${runId}/cancel`, { method: 'POST', headers: bearer(t.fixture.key) });
  assert.equal(res.statusCode, 200, res.body);
}

function assertStreamRefused(answer: OpenedStream): void {
  const refused = asAnswer(answer);
  const error = assertError(refused, 429, 'rate_limited');
  assert.equal(refused.headers['retry-after'], '5');
  assert.deepEqual(error.details, { limit_per_minute: 60, reason: 'too_many_streams', limit_streams_per_key: 10, limit_streams_per_team: STREAMS_PER_TEAM });
  assert.match(error.message, new RegExp(`${STREAMS_PER_TEAM} per team`));
}

/** The index of the first request answered, or a failure if none is answered within the time. */
async function firstAnswered(requests: Promise<AnsweredRequest>[], timeoutMs: number): Promise<number> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no request answered within ${timeoutMs} ms: every one is waiting`)), timeoutMs);
  });
  try {
    return await Promise.race([...requests.map((r, i) => r.then(() => i)), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

describe("a team's share of the process's held requests", () => {
  test('streams: team A, with two keys and both kinds, gets 429 past its share; team B still opens streams; a closed one frees a place', async () => {
    const a = await team();
    const b = await team();
    const runA = (await a.runs.start('hang')).id;
    const runB = (await b.runs.start('hang')).id;
    const held: OpenedStream[] = [await runStream(a.fixture.key, runA), await teamStream(a.fixture.key), await runStream(a.second, runA)];
    for (const h of held) assert.equal(h.status, 200);

    assertStreamRefused(await runStream(a.second, runA));
    assertStreamRefused(await teamStream(a.fixture.key));

    const others: OpenedStream[] = [];
    for (let i = 0; i < STREAMS_PER_TEAM; i++) {
      const opened = i === 0 ? await teamStream(b.second) : await runStream(b.fixture.key, runB);
      assert.equal(opened.status, 200, `team B's stream ${i + 1}: ${opened.body}`);
      others.push(opened);
    }

    held.shift()?.close();
    held.push(
      await waitFor('the place of the closed stream given back', async () => {
        const opened = await runStream(a.second, runA);
        return opened.status === 200 ? opened : null;
      }),
    );

    await cancel(a, runA);
    await cancel(b, runB);
    for (const o of [...held, ...others]) o.close();
  });

  test("waiters: team A's waiter past its share is answered at once without Preference-Applied; team B's wait and are woken", async () => {
    const a = await team();
    const b = await team();
    const runA = (await a.runs.start('hang')).id;
    const runB = (await b.runs.start('hang')).id;
    try {
      // One more than A's share, from two keys, all at once: whichever comes last is refused.
      const fromA = [waitOn(a.fixture.key, runA), waitOn(a.second, runA), waitOn(a.fixture.key, runA)];
      const fromB = Array.from({ length: WAITERS_PER_TEAM }, (_, i) => waitOn(i ? b.second : b.fixture.key, runB));
      const first = await firstAnswered([...fromA, ...fromB], 15_000);
      assert.ok(first < fromA.length, `the first answer is team A's, not team B's (request ${first})`);
      const refused = await fromA[first];
      assert.ok(refused);
      assert.equal(refused.statusCode, 200, refused.body);
      assert.equal(refused.headers['preference-applied'], undefined, 'past the share: answered at once, no wait applied');
      assert.equal(refused.json<{ status: string }>().status, 'queued');

      await cancel(a, runA);
      await cancel(b, runB);
      const answeredA = await Promise.all(fromA);
      const answeredB = await Promise.all(fromB);
      const appliedA = answeredA.filter((r) => r.headers['preference-applied'] === 'wait=60');
      assert.equal(appliedA.length, WAITERS_PER_TEAM, "A's share waited");
      for (const r of [...appliedA, ...answeredB]) {
        assert.equal(r.headers['preference-applied'], 'wait=60');
        assert.equal(r.json<{ status: string }>().status, 'canceled', 'woken by the cancel');
      }
    } finally {
      for (const [t, id] of [
        [a, runA],
        [b, runB],
      ] as const) {
        await socketRequest(s.url, `/v1/runs/${id}/cancel`, { method: 'POST', headers: bearer(t.fixture.key) });
      }
    }
  });

  test('the share is a quarter of the process unless set, and never above the process bound', () => {
    const env = { TOOLRUN_ENV: 'test', TOOLRUN_DATA_DIR: '/tmp' };
    const defaults = loadConfig(env);
    assert.deepEqual(defaults.streams, { perProcess: 1000, perTeam: 250 });
    assert.deepEqual(defaults.waiters, { perProcess: 1000, perTeam: 250 });
    const small = loadConfig({ ...env, TOOLRUN_STREAMS_PER_PROCESS: '2', TOOLRUN_WAITERS_PER_PROCESS: '40' });
    assert.deepEqual(small.streams, { perProcess: 2, perTeam: 1 });
    assert.deepEqual(small.waiters, { perProcess: 40, perTeam: 10 });
    assert.throws(
      () => loadConfig({ ...env, TOOLRUN_STREAMS_PER_PROCESS: '100', TOOLRUN_STREAMS_PER_TEAM: '101' }),
      (err: unknown) => err instanceof ConfigError && err.variable === 'TOOLRUN_STREAMS_PER_TEAM' && /from 1 to 100\b/.test(err.message),
    );
    assert.throws(() => loadConfig({ ...env, TOOLRUN_WAITERS_PER_PROCESS: '0' }), (err: unknown) => err instanceof ConfigError && err.variable === 'TOOLRUN_WAITERS_PER_PROCESS');
  });
});
