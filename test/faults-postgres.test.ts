// Fault: PostgreSQL stopped and started again on the same port, then frozen and thawed, while
// clients keep calling the API. A private server (its own data directory and port) so the outage
// touches nothing else. Three teams keep sending GET /v1/me, estimates and run starts (with
// Idempotency-Keys), and /readyz is polled, before, during and after each outage, against the real
// app with an in-process worker. During an outage every answer is a 503 service_unavailable in
// the error envelope (request_id, Retry-After), never a 500 and never a hang (at once when the
// server is down; within the pool's timeouts when it hangs); afterwards the service recovers by
// itself: the API answers 200, the workers' LISTEN connection is back, every run started before,
// across and after the outage ends succeeded exactly once, and the ledger balances.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { migrate } from '../src/db/migrate.js';
import { createDb, QUERY_TIMEOUT_MS } from '../src/db/pool.js';
import { createLogger } from '../src/logger.js';
import type { RunWorker } from '../src/runs/worker.js';
import { LogSink } from './helpers/app.js';
import { makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { assertTeamBalanced, uploadReadyFile } from './helpers/faults.js';
import { PrivatePostgres } from './helpers/faults-pg.js';
import { makePng } from './helpers/media.js';
import { assertSettledOnce, parseLogLines, runState, waitFinal, waitFor } from './helpers/runs-harness.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { testRegistry } from './helpers/test-tools.js';
import { startTestWorker } from './helpers/worker.js';

/** A client gives up on a request after this long; the service must answer well before. */
const CLIENT_TIMEOUT_MS = 30_000;
/** A stopped server refuses connections and ends sessions: answers come at once (a second is slack). */
const STOPPED_ANSWER_BOUND_MS = 2_000;
/**
 * A frozen server answers nothing: a request may wait for a connection (5 s) and then for one
 * query (QUERY_TIMEOUT_MS) before its 503; two seconds of slack on top.
 */
const FROZEN_ANSWER_BOUND_MS = 5_000 + QUERY_TIMEOUT_MS + 2_000;

type Kind = 'me' | 'estimate' | 'start' | 'readyz';

interface Sample {
  kind: Kind;
  team: number;
  sentAt: number;
  answeredAt: number;
  status: number | 'timeout' | 'network';
  headerId: string | null;
  retryAfter: string | null;
  body: { id?: string; error?: { code: string; request_id: string; errors: unknown; details: unknown; message: string } } | null;
}

let pgsrv: PrivatePostgres;
let s: TestServer;
let worker: RunWorker;
const poolLogs = new LogSink();
const teams: { team: TeamFixture; fileId: string }[] = [];

/**
 * Errors nobody handled: in `toolrun serve` each would have ended the process (a pg client's
 * 'error' event without a listener, say), so each test asserts there were none.
 */
const uncaught: unknown[] = [];
process.on('uncaughtException', (err) => uncaught.push(err));

before(async () => {
  pgsrv = await PrivatePostgres.create();
  await migrate(pgsrv.url, createLogger('silent'));
  const database = { name: 'toolrun', url: pgsrv.url, db: createDb({ connectionString: pgsrv.url, logger: createLogger('warn', poolLogs), max: 10 }) };
  s = await startTestServer({ database, tools: testRegistry(), env: { TOOLRUN_LEASE_SECONDS: '3', TOOLRUN_WORKER_POLL_MS: '60000' } });
  worker = await startTestWorker(s, testRegistry(), { concurrency: 2 });
  const png = await makePng(64, 48);
  for (let i = 0; i < 3; i++) {
    const team = await makeTeam(s.database.db, { sparks: 10_000, rate: 300 });
    teams.push({ team, fileId: await uploadReadyFile(s.url, team.key, png, 'a.png', 'image/png') });
  }
}, { timeout: 180_000 });

after(async () => {
  await worker?.stop(1000);
  await s?.close();
  await s?.database.db.close();
  await pgsrv?.destroy();
}, { timeout: 60_000 });

/** One request of the given kind for team i, recorded whatever happens. */
async function send(kind: Kind, i: number): Promise<Sample> {
  const { team, fileId } = teams[i]!;
  const body = { inputs: { image: [fileId], mode: 'ok' } };
  const req: { url: string; init: RequestInit } =
    kind === 'readyz'
      ? { url: '/readyz', init: {} }
      : kind === 'me'
        ? { url: '/v1/me', init: {} }
        : {
            url: `/v1/tools/test_copy/${kind === 'start' ? 'runs' : 'estimate'}`,
            init: {
              method: 'POST',
              body: JSON.stringify(body),
              headers: { 'content-type': 'application/json', ...(kind === 'start' ? { 'idempotency-key': randomUUID() } : {}) },
            },
          };
  const headers = { ...(kind === 'readyz' ? {} : { authorization: `Bearer ${team.key}` }), ...(req.init.headers as Record<string, string> | undefined) };
  const sentAt = Date.now();
  try {
    const res = await fetch(`${s.url}${req.url}`, { ...req.init, headers, signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS) });
    const text = await res.text();
    return {
      kind,
      team: i,
      sentAt,
      answeredAt: Date.now(),
      status: res.status,
      headerId: res.headers.get('x-request-id'),
      retryAfter: res.headers.get('retry-after'),
      body: text ? (JSON.parse(text) as Sample['body']) : null,
    };
  } catch (err) {
    const status = (err as Error).name === 'TimeoutError' ? 'timeout' : 'network';
    return { kind, team: i, sentAt, answeredAt: Date.now(), status, headerId: null, retryAfter: null, body: null };
  }
}

/** Clients calling the API in a loop (one per team, plus /readyz) until stopped. */
class Traffic {
  readonly samples: Sample[] = [];
  private running = true;
  private readonly loops: Promise<void>[];

  constructor() {
    const kinds: Kind[] = ['me', 'estimate', 'start'];
    this.loops = [
      ...teams.map(async (_, i) => {
        for (let n = i; this.running; n++) {
          this.samples.push(await send(kinds[n % kinds.length]!, i));
          await new Promise((r) => setTimeout(r, 150));
        }
      }),
      (async () => {
        while (this.running) {
          this.samples.push(await send('readyz', 0));
          await new Promise((r) => setTimeout(r, 250));
        }
      })(),
    ];
  }

  /** Waits until at least n more answers of every kind have been recorded (to requests sent after `since`). */
  async more(n: number, since = 0): Promise<void> {
    const count = (k: Kind) => this.samples.filter((x) => x.kind === k && x.sentAt >= since).length;
    const start = Object.fromEntries((['me', 'estimate', 'start', 'readyz'] as Kind[]).map((k) => [k, count(k)]));
    await waitFor(`${n} more answers of every kind`, async () => ((Object.keys(start) as Kind[]).every((k) => count(k) >= start[k]! + n) ? true : undefined), 60_000, 50);
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }
}

/** Nothing hung, nothing failed with a 500; anything but a success is the 503 envelope. */
function assertAnswered(all: Sample[]): void {
  for (const x of all) {
    assert.ok(typeof x.status === 'number', `${x.kind} got no answer (${x.status}) after ${x.answeredAt - x.sentAt} ms`);
    assert.ok([200, 202, 503].includes(x.status), `${x.kind} answered ${x.status}: ${JSON.stringify(x.body)}`);
    if (x.status !== 503) continue;
    const e = x.body?.error;
    assert.ok(e, `503 in the envelope: ${JSON.stringify(x.body)}`);
    assert.deepEqual(Object.keys(e).sort(), ['code', 'details', 'errors', 'message', 'request_id']);
    assert.equal(e.code, 'service_unavailable');
    assert.equal(e.request_id, x.headerId);
    assert.equal(e.errors, null);
    assert.equal(x.retryAfter, '1');
  }
}

/** Requests sent after `from` and answered before `to` all got 503, n or more of each kind. */
function assertUnavailableBetween(all: Sample[], from: number, to: number, n: number): void {
  const during = all.filter((x) => x.sentAt >= from && x.answeredAt <= to);
  for (const k of ['me', 'estimate', 'start', 'readyz'] as Kind[]) {
    const some = during.filter((x) => x.kind === k);
    assert.ok(some.length >= n, `${k} was tried ${some.length} times during the outage`);
    assert.deepEqual([...new Set(some.map((x) => x.status))], [503], `${k} during the outage`);
  }
}

/** The slowest answer to a request that overlapped [from, to]. */
function slowestAround(all: Sample[], from: number, to: number): number {
  return Math.max(...all.filter((x) => x.answeredAt >= from && x.sentAt <= to).map((x) => x.answeredAt - x.sentAt));
}

/** Recovery without anyone touching the service: every team gets 200 again, and /readyz. */
async function assertRecovered(): Promise<void> {
  for (const [i] of teams.entries()) {
    await waitFor(`team ${i} to get 200 from /v1/me`, async () => ((await send('me', i)).status === 200 ? true : undefined), 30_000, 200);
  }
  await waitFor('/readyz to answer 200', async () => ((await send('readyz', 0)).status === 200 ? true : undefined), 30_000, 200);
}

/** A run started now succeeds; so does every run in the database (those whose answer was lost too). */
async function assertRunsSettled(all: Sample[]): Promise<void> {
  const late = await send('start', 0);
  assert.equal(late.status, 202, JSON.stringify(late.body));
  const accepted = all.filter((x) => x.kind === 'start' && x.status === 202).map((x) => x.body?.id ?? '');
  assert.ok(accepted.length >= 2);
  const { rows } = await s.database.db.pool.query<{ id: string }>(`SELECT id FROM runs`);
  const ids = new Set([...accepted, late.body?.id ?? '', ...rows.map((r) => r.id)]);
  for (const id of ids) {
    const done = await waitFinal(s.database.db.pool, id, 60_000);
    assert.equal(done.status, 'succeeded', `run ${id}: ${done.error ?? ''}`);
    await assertSettledOnce(s.database.db.pool, await runState(s.database.db.pool, id));
  }
  for (const { team } of teams) await assertTeamBalanced(s.database.db.pool, team.teamId);
}

/** The logs say it without a stack trace per request: at most one warning line per 503. */
function assertQuietLogs(all: Sample[]): void {
  const unavailable = new Set(all.filter((x) => x.status === 503).map((x) => x.headerId));
  const lines = parseLogLines(s.logs.text()).filter((l) => unavailable.has(String(l.request_id)));
  assert.ok(lines.length > 0, 'the 503s were logged');
  for (const l of lines) assert.doesNotMatch(JSON.stringify(l), /"stack"/, `a stack trace in a request log line: ${l.msg}`);
  for (const id of unavailable) {
    const mine = lines.filter((l) => l.request_id === id && Number(l.level) >= 40);
    assert.ok(mine.length <= 1, `request ${id} logged ${mine.length} warnings or errors`);
    assert.ok(mine.every((l) => Number(l.level) === 40), `request ${id} logged above warn`);
  }
}

describe('PostgreSQL outages under traffic', { concurrency: 1, timeout: 400_000 }, () => {
  test('stopped and restarted on the same port: quick 503s, never a 500 or a hang; the service recovers by itself', { timeout: 180_000 }, async (t) => {
    const traffic = new Traffic();
    await traffic.more(2);
    const stopping = Date.now();
    await pgsrv.stop();
    const down = Date.now();
    await traffic.more(3, down);
    const restarting = Date.now();
    await pgsrv.start();
    await assertRecovered();
    await traffic.more(2);
    await traffic.stop();
    const all = traffic.samples;

    assertAnswered(all);
    assertUnavailableBetween(all, down, restarting, 2);
    const slowest = slowestAround(all, stopping, restarting);
    t.diagnostic(`${all.filter((x) => x.status === 503).length} answers 503 of ${all.length}; slowest around the outage ${slowest} ms`);
    assert.ok(slowest < STOPPED_ANSWER_BOUND_MS, `every request around the outage was answered within ${STOPPED_ANSWER_BOUND_MS} ms (slowest ${slowest} ms)`);
    // The process's one LISTEN connection (the API's and the worker's) came back by itself.
    await waitFor(
      'the process to LISTEN again',
      async () => {
        const { rows } = await s.database.db.pool.query(`SELECT 1 FROM pg_stat_activity WHERE application_name = 'toolrun-listen' AND query ILIKE 'LISTEN%'`);
        return rows.length ? true : undefined;
      },
      30_000,
      200,
    );
    await assertRunsSettled(all);
    assertQuietLogs(all);
    assert.deepEqual(uncaught, [], 'no error went unhandled');
  });

  test('frozen (connections open, nothing answers): 503 once the timeouts pass, never a hang; recovers when it thaws', { timeout: 180_000 }, async (t) => {
    const traffic = new Traffic();
    await traffic.more(1);
    const freezing = Date.now();
    pgsrv.freeze();
    await traffic.more(1, freezing + 100);
    const thawing = Date.now();
    pgsrv.thaw();
    await assertRecovered();
    await traffic.more(1);
    await traffic.stop();
    const all = traffic.samples;

    assertAnswered(all);
    // Sent after the freeze and answered before the thaw: nothing could have succeeded.
    assertUnavailableBetween(all, freezing + 100, thawing, 1);
    const slowest = slowestAround(all, freezing, thawing);
    t.diagnostic(`${all.filter((x) => x.status === 503).length} answers 503 of ${all.length}; slowest while frozen ${slowest} ms`);
    assert.ok(slowest < FROZEN_ANSWER_BOUND_MS, `every request while frozen was answered within ${FROZEN_ANSWER_BOUND_MS} ms (slowest ${slowest} ms)`);
    await assertRunsSettled(all);
    assertQuietLogs(all);
    assert.deepEqual(uncaught, [], 'no error went unhandled');
  });
});
