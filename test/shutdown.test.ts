// Graceful shutdown of real processes over real sockets: `toolrun serve` (with and without its
// workers) and `toolrun worker`, all on this file's PostgreSQL database. SIGTERM while a slow
// request and a running run are in flight: the request completes, a request arriving meanwhile gets
// 503 in the envelope, the run ends once, the process exits 0. A worker whose grace runs out hands
// its run back to another worker. The HTTP grace cuts off a client that never finishes; a second
// signal forces the exit. A `toolrun worker`'s metrics listener is scraped on the way.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import { after, afterEach, before, describe, test } from 'node:test';
import { loadConfig } from '../src/config/config.js';
import { resolveMediaBinaries } from '../src/media/binaries.js';
import { Metrics } from '../src/metrics/metrics.js';
import { RunWorker } from '../src/runs/worker.js';
import { createToolRegistry } from '../src/tools/registry.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import { HoldSite, startToolrunWorker, toolrunEnv, workerIdOf } from './helpers/faults.js';
import { bearer, callApi, makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { CliProcess, killLiveChildren, makeDataDir, waitFor, type Exit } from './helpers/process.js';
import { closeReceivers, ok, Receiver } from './helpers/receiver.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { testLogger } from './helpers/test-logs.js';

const METRICS_TOKEN = 'shutdown-test-metrics-token-0123456789';
let database: TestDatabase;
let team: TeamFixture;
let site: HoldSite;
const dataDirs: string[] = [];

before(async () => {
  database = await createTestDatabase();
  team = await makeTeam(database.db, { sparks: 1000, rate: 300, scopes: ['read', 'run', 'webhooks'] });
  site = await new HoldSite().start();
});
// A test that fails midway must not leave a process (with workers) or a held page to the next.
afterEach(() => {
  killLiveChildren();
  site.release();
});
after(async () => {
  killLiveChildren();
  await closeReceivers();
  await site?.close();
  await database?.db.close();
  for (const dir of dataDirs) fs.rmSync(dir, { recursive: true, force: true });
});

function dataDir(): string {
  const dir = makeDataDir('shutdown');
  dataDirs.push(dir);
  return dir;
}

/** `toolrun serve [args]` on this file's database; resolves with the process and its URL once it listens. */
async function serve(args: string[], env: Record<string, string>): Promise<{ proc: CliProcess; url: string; port: number }> {
  const proc = new CliProcess(['serve', ...args], toolrunEnv({ DATABASE_URL: database.url, TOOLRUN_DATA_DIR: dataDir(), PORT: '0', ...env }));
  const line = await proc.waitForLog('toolrun API listening');
  const url = String(line.url);
  return { proc, url, port: Number(new URL(url).port) };
}

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * One HTTP/1.1 connection written by hand, so a test can leave a request half sent across a
 * signal. The server closes it after answering (every answer while closing says Connection: close).
 */
class RawConnection {
  private data = '';
  private closed = false;
  private constructor(private readonly socket: net.Socket) {
    socket.on('data', (c: Buffer) => (this.data += c.toString('latin1')));
    socket.on('close', () => (this.closed = true));
    socket.on('error', () => undefined);
  }

  static open(port: number): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () => resolve(new RawConnection(socket)));
      socket.once('error', reject);
    });
  }

  write(text: string): void {
    this.socket.write(text);
  }

  /** The first response, once the server has closed the connection (null if it sent none). */
  async response(timeoutMs = 60_000): Promise<RawResponse | null> {
    await waitFor('the server to close the connection', () => this.closed, timeoutMs);
    if (!this.data) return null;
    const split = this.data.indexOf('\r\n\r\n');
    const [statusLine = '', ...lines] = this.data.slice(0, split).split('\r\n');
    const headers: Record<string, string> = {};
    for (const l of lines) headers[l.slice(0, l.indexOf(':')).toLowerCase()] = l.slice(l.indexOf(':') + 1).trim();
    const body = this.data.slice(split + 4, split + 4 + Number(headers['content-length'] ?? 0));
    return { status: Number(statusLine.split(' ')[1]), headers, body };
  }
}

/**
 * A complete request on a fresh connection, answered: everything written to the server on earlier
 * connections has been read by then (it was on the wire first), so a half-sent request counts as
 * arrived before a signal sent after this.
 */
async function barrier(port: number): Promise<void> {
  const c = await RawConnection.open(port);
  c.write('GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n');
  assert.equal((await c.response())?.status, 200);
}

/** The process's exit, which must come within timeoutMs (the test fails otherwise). */
async function exitWithin(proc: CliProcess, timeoutMs: number): Promise<Exit> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`toolrun ${proc.args.join(' ')} did not exit within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([proc.exited, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** True once a TCP connection to the port is refused: the process no longer accepts. */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'));
  });
}

/** Starts a brand_kit_extract run of the hold site's page; the run's id. */
async function startRun(baseUrl: string): Promise<string> {
  const res = await callApi(baseUrl, team.key, 'POST', '/v1/tools/brand_kit_extract/runs', { inputs: { url: site.url } });
  assert.equal(res.status, 202, await res.clone().text());
  return ((await res.json()) as { id: string }).id;
}

interface RunRow {
  status: string;
  attempts: number;
  lease_owner: string | null;
  error: string | null;
}

async function runRow(id: string): Promise<RunRow> {
  const { rows } = await database.db.pool.query<RunRow>('SELECT status, attempts, lease_owner, error FROM runs WHERE id = $1::uuid', [id]);
  assert.ok(rows[0]);
  return rows[0];
}

/** The run ended once: succeeded, charged once, one event, no lease left. */
async function assertSucceededOnce(id: string): Promise<void> {
  const run = await runRow(id);
  assert.equal(run.status, 'succeeded', run.error ?? '');
  assert.equal(run.lease_owner, null);
  const ledger = await database.db.pool.query<{ kind: string; n: number }>(
    'SELECT kind, count(*)::integer AS n FROM ledger_entries WHERE run_id = $1::uuid GROUP BY kind ORDER BY kind',
    [id],
  );
  assert.deepEqual(Object.fromEntries(ledger.rows.map((r) => [r.kind, r.n])), { charge: 1, hold: 1, release: 1 });
  const events = await database.db.pool.query<{ type: string }>('SELECT type FROM run_events WHERE run_id = $1::uuid', [id]);
  assert.deepEqual(events.rows.map((r) => r.type), ['run.succeeded']);
}

describe('graceful shutdown', () => {
  test('serve: SIGTERM lets a slow request and a running run finish, answers newcomers 503, exits 0', async () => {
    const s = await serve([], { TOOLRUN_SHUTDOWN_GRACE_SECONDS: '60', TOOLRUN_WORKER_CONCURRENCY: '1' });
    site.holding = true;
    const runId = await startRun(s.url);
    await waitFor('the run to fetch the held page', () => site.waiting === 1, 60_000);

    // The slow request: a webhook test ping whose receiver does not answer yet.
    const receiver = (await Receiver.start()).program('hang');
    const created = await callApi(s.url, team.key, 'POST', '/v1/webhook-endpoints', { url: receiver.url(), events: ['run.failed'] });
    assert.equal(created.status, 201, await created.clone().text());
    const endpointId = ((await created.json()) as { id: string }).id;
    const ping = callApi(s.url, team.key, 'POST', `/v1/webhook-endpoints/${endpointId}/test`);
    ping.catch(() => undefined); // awaited below; a failure before that must not go unhandled
    await receiver.waitForRequests(1, 30_000);

    // A request that has begun to arrive, on a connection the server holds.
    const late = await RawConnection.open(s.port);
    late.write(`GET /v1/me HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer ${team.key}\r\n`);
    await barrier(s.port);

    process.kill(s.proc.pid, 'SIGTERM');
    await s.proc.waitForLog('shutting down');
    await waitFor('new connections to be refused', () => refused(s.port), 30_000);

    late.write('\r\n');
    const lateRes = await late.response();
    assert.ok(lateRes, 'the late request is answered');
    assert.equal(lateRes.status, 503);
    assert.equal(lateRes.headers['connection'], 'close');
    assert.equal(lateRes.headers['retry-after'], '1');
    const lateBody = JSON.parse(lateRes.body) as { error: { code: string; request_id: string; errors: unknown } };
    assert.equal(lateBody.error.code, 'service_unavailable');
    assert.equal(lateBody.error.request_id, lateRes.headers['x-request-id']);
    assert.equal(lateBody.error.errors, null);

    receiver.release(ok);
    const pinged = await ping;
    assert.equal(pinged.status, 200);
    assert.equal(pinged.headers.get('connection'), 'close');
    const result = (await pinged.json()) as { object: string; delivered: boolean; response_code: number };
    assert.deepEqual([result.object, result.delivered, result.response_code], ['webhook_test', true, 204]);

    assert.notEqual((await runRow(runId)).status, 'succeeded', 'the run is still held');
    site.release();
    // No second signal (that would force the exit): the process ends by itself once the run is done.
    const exit = await exitWithin(s.proc, 60_000);
    assert.deepEqual(exit, { code: 0, signal: null }, s.proc.stdout + s.proc.stderr);
    await assertSucceededOnce(runId);
    assert.equal((await runRow(runId)).attempts, 1);
  });

  describe('worker', () => {
    let api: TestServer;
    before(async () => {
      // The API alone (no workers), in this process: the runs go to the workers the test starts.
      api = await startTestServer({ database, env: { TOOLRUN_ALLOW_PRIVATE_NETWORK: '1' } });
    });
    after(async () => {
      killLiveChildren();
      await api?.close();
    });

    test('SIGTERM past the grace: the run is handed back, another worker finishes it once; exits 0', async () => {
      const first = await startToolrunWorker({
        DATABASE_URL: database.url,
        TOOLRUN_DATA_DIR: api.config.dataDir,
        TOOLRUN_WORKER_CONCURRENCY: '1',
        TOOLRUN_SHUTDOWN_GRACE_SECONDS: '1',
        TOOLRUN_METRICS_TOKEN: METRICS_TOKEN,
        TOOLRUN_METRICS_PORT: '0',
        HOST: '127.0.0.1',
      });
      const pagesBefore = site.requests.filter((p) => p === '/').length;
      site.holding = true;
      const runId = await startRun(api.url);
      await waitFor('the first worker to fetch the held page', () => site.waiting === 1, 60_000);
      assert.ok((await runRow(runId)).lease_owner?.startsWith(`${workerIdOf(first)}/`), 'the first worker holds the run');

      // The worker's metrics listener: the token rule, and the cluster-wide figures (the run it holds).
      const metricsUrl = String((await first.waitForLog('metrics listening')).url);
      assert.match(metricsUrl, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      const scraped = await fetch(metricsUrl, { headers: bearer(METRICS_TOKEN) });
      assert.equal(scraped.status, 200);
      assert.match(await scraped.text(), /^toolrun_runs_running\{tool="brand_kit_extract"\} 1$/m);
      const noToken = await fetch(metricsUrl);
      assert.equal(noToken.status, 401);
      assert.equal(((await noToken.json()) as { error: { code: string } }).error.code, 'metrics_token_required');
      const other = await fetch(metricsUrl.replace(/\/metrics$/, '/v1/me'));
      assert.equal(other.status, 404);
      const otherBody = (await other.json()) as { error: { code: string; request_id: string } };
      assert.deepEqual([otherBody.error.code, otherBody.error.request_id], ['not_found', other.headers.get('x-request-id')]);

      // Another worker (in this process, with the real tools), idle until the run comes back.
      const logger = testLogger('silent');
      const metrics = new Metrics({ db: database.db, logger, toolIds: [], clusterRefreshMs: 0 });
      const second = new RunWorker({
        config: loadConfig({ TOOLRUN_ENV: 'test', TOOLRUN_DATA_DIR: api.config.dataDir, TOOLRUN_ALLOW_PRIVATE_NETWORK: '1' }),
        db: database.db,
        storage: api.storage,
        tools: createToolRegistry(),
        media: resolveMediaBinaries(),
        logger,
        concurrency: 1,
        metrics,
      });
      await second.start();
      try {
        // The first worker's fetch stays held; a fetch from now on is answered at once.
        site.holding = false;
        const exit = await first.stop('SIGTERM', 60_000);
        assert.deepEqual(exit, { code: 0, signal: null }, first.stderr);
        assert.ok(
          first.logs().some((l) => l.msg === 'run stopped' && l.run_id === runId && l.reason === 'shutdown'),
          'the first worker stopped the run for the shutdown',
        );
        await waitFor('the run to end on the second worker', async () => ['succeeded', 'failed'].includes((await runRow(runId)).status), 60_000);
      } finally {
        await second.stop(5000);
      }
      await assertSucceededOnce(runId);
      // Handed back, not lost: the interrupted attempt does not count.
      assert.equal((await runRow(runId)).attempts, 1);
      assert.equal(site.requests.filter((p) => p === '/').length - pagesBefore, 2, 'the page was fetched by each worker');
      const text = await metrics.render();
      assert.match(text, /^toolrun_runs_total\{tool="brand_kit_extract",outcome="succeeded"\} 1$/m);
      assert.match(text, /^toolrun_run_duration_seconds_count\{tool="brand_kit_extract",outcome="succeeded"\} 1$/m);
    });
  });

  test('serve --no-workers: the grace cuts off a request that never finishes (exit 0); a second SIGINT exits at once (1)', async () => {
    const [short, long] = await Promise.all([
      serve(['--no-workers'], { TOOLRUN_SHUTDOWN_GRACE_SECONDS: '1' }),
      serve(['--no-workers'], { TOOLRUN_SHUTDOWN_GRACE_SECONDS: '600' }),
    ]);
    // A body that never ends: its request is in flight until the server gives up on it.
    const body = JSON.stringify({ inputs: { url: 'https://example.com/' } });
    const stuck = async (port: number) => {
      const c = await RawConnection.open(port);
      c.write(
        `POST /v1/tools/brand_kit_extract/estimate HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer ${team.key}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
      );
      await barrier(port);
      return c;
    };
    const [cutShort, cutLong] = await Promise.all([stuck(short.port), stuck(long.port)]);

    const shortExit = await short.proc.stop('SIGTERM', 60_000);
    assert.deepEqual(shortExit, { code: 0, signal: null }, short.proc.stderr);
    assert.equal(await cutShort.response(), null, 'the stuck request was cut off without an answer');

    process.kill(long.proc.pid, 'SIGINT');
    await long.proc.waitForLog('shutting down');
    // A signal right after the first is the same keypress (npm forwards its own copy); past that, it insists.
    await long.proc.waitForLog('still shutting down; another Ctrl-C or SIGTERM exits at once');
    const longExit = await long.proc.stop('SIGINT', 60_000);
    assert.deepEqual(longExit, { code: 1, signal: null }, long.proc.stderr);
    assert.ok(long.proc.logs().some((l) => l.msg === 'second signal: exiting now' && l.signal === 'SIGINT'));
    assert.equal(await cutLong.response(), null);
  });
});
