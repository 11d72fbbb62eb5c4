// GET /metrics over real sockets, with real PostgreSQL, in-process run and webhook workers recording
// into the same per-process registry, and a real HTTPS webhook receiver: off by default, token
// rules in the error envelope, no API key and no rate limit, not in the OpenAPI document, route
// patterns as labels, cluster-wide queue and ledger figures, run and webhook outcomes, and the
// configuration checks. The worker's own metrics listener is exercised in shutdown.test.ts.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { ConfigError, loadConfig, type Config } from '../src/config/config.js';
import { createDb, type Db } from '../src/db/pool.js';
import { buildApp } from '../src/service/app.js';
import { resolveMediaBinaries } from '../src/media/binaries.js';
import { Metrics } from '../src/metrics/metrics.js';
import { metricsTokenMatches } from '../src/metrics/routes.js';
import { RunWorker } from '../src/runs/worker.js';
import { createStorage } from '../src/storage/create.js';
import { WebhookWorker } from '../src/webhooks/worker.js';
import { LogSink, testConfig } from './helpers/app.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import { bearer, callApi, makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { makePng } from './helpers/media.js';
import { closeReceivers, fail500, ok, Receiver } from './helpers/receiver.js';
import { startTestServer, freePort, type TestServer } from './helpers/server.js';
import { testLogger } from './helpers/test-logs.js';
import { testRegistry } from './helpers/test-tools.js';
import { uploadAll, type Upload } from './helpers/uploads.js';
import { waitFor } from './helpers/worker.js';

const TOKEN = `mt_${randomUUID().replace(/-/g, '')}`;
const tools = testRegistry();

interface Scrape {
  text: string;
  /** The value of the sample with exactly these labels, or undefined when there is none. */
  value(name: string, labels?: Record<string, string>): number | undefined;
}

/** Parses the Prometheus text format (one sample per line: name{a="b",...} value). */
function parseScrape(text: string): Scrape {
  const samples: { name: string; labels: Record<string, string>; value: number }[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m, `not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1] ?? ''] = l[2] ?? '';
    samples.push({ name: m[1] ?? '', labels, value: Number(m[3]) });
  }
  return {
    text,
    value(name, want = {}) {
      const hit = samples.find(
        (s) => s.name === name && Object.keys(s.labels).length === Object.keys(want).length && Object.entries(want).every(([k, v]) => s.labels[k] === v),
      );
      return hit?.value;
    },
  };
}

interface Instrumented {
  url: string;
  app: FastifyInstance;
  config: Config;
  metrics: Metrics;
  close(): Promise<void>;
}

/** The real app on a real socket, with metrics on, as `toolrun serve` builds it with a token. */
async function startInstrumented(database: TestDatabase, env: Record<string, string> = {}): Promise<Instrumented> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const config = testConfig({ PORT: String(port), HOST: '127.0.0.1', PUBLIC_BASE_URL: url, TOOLRUN_METRICS_TOKEN: TOKEN, ...env });
  const logger = testLogger('warn', new LogSink());
  const metrics = new Metrics({ db: database.db, logger, toolIds: ['test_copy'], clusterRefreshMs: 0 });
  const storage = await createStorage(config, database.db.pool);
  const app = await buildApp({ config, db: database.db, logger, tools, storage, media: resolveMediaBinaries(), metrics });
  await app.listen({ port, host: '127.0.0.1' });
  return { url, app, config, metrics, close: () => app.close() };
}

async function scrape(url: string): Promise<Scrape> {
  const res = await fetch(`${url}/metrics`, { headers: bearer(TOKEN) });
  assert.equal(res.status, 200, await res.clone().text());
  return parseScrape(await res.text());
}

async function json(res: Response): Promise<{ error: { code: string; message: string; request_id: string; errors: unknown; details: unknown } }> {
  return (await res.json()) as { error: { code: string; message: string; request_id: string; errors: unknown; details: unknown } };
}

let database: TestDatabase;
let s: Instrumented;
before(async () => {
  database = await createTestDatabase();
  s = await startInstrumented(database, {
    TOOLRUN_ALLOW_PRIVATE_NETWORK: '1',
    TOOLRUN_WEBHOOK_RETRY_DELAYS: '1',
    TOOLRUN_WORKER_POLL_MS: '200',
    TOOLRUN_WEBHOOK_CONCURRENCY: '4',
  });
});
after(async () => {
  await closeReceivers();
  await s?.close();
  await database?.db.close();
});

describe('GET /metrics: access', () => {
  test('off unless a token is configured: 404 not_found in the envelope, exactly as an unknown path answers', async () => {
    // Without a token `toolrun serve` builds no metrics at all; the route is simply not there.
    const plain: TestServer = await startTestServer({ database });
    const offline = new Metrics({ db: database.db, logger: testLogger('silent'), toolIds: [] });
    // And should metrics be wired without a token, the route itself still says it does not exist.
    const noToken = await buildApp({
      config: testConfig(),
      db: database.db,
      logger: testLogger('silent'),
      tools,
      storage: plain.storage,
      media: resolveMediaBinaries(),
      metrics: offline,
    });
    try {
      for (const res of [await fetch(`${plain.url}/metrics`, { headers: bearer(TOKEN) }), await fetch(`${plain.url}/metrics`)]) {
        assert.equal(res.status, 404);
        const body = await json(res);
        assert.equal(body.error.code, 'not_found');
        assert.equal(body.error.request_id, res.headers.get('x-request-id'));
        assert.equal(body.error.errors, null);
      }
      const unknown = await json(await fetch(`${plain.url}/metricz`));
      assert.equal(unknown.error.message, 'No route GET /metricz. Every path starts with /v1. GET /v1/openapi.json lists every route.');
      const injected = await noToken.inject({ method: 'GET', url: '/metrics', headers: bearer(TOKEN) });
      assert.equal(injected.statusCode, 404);
      const body = injected.json<{ error: { code: string; message: string; request_id: string } }>();
      assert.equal(body.error.code, 'not_found');
      assert.equal(body.error.message, 'No route GET /metrics. Every path starts with /v1. GET /v1/openapi.json lists every route.');
      assert.equal(body.error.request_id, injected.headers['x-request-id']);
    } finally {
      await noToken.close();
      await plain.close();
    }
  });

  test('a missing or wrong token answers 401 in the envelope; the right one the Prometheus text', async () => {
    const team = await makeTeam(database.db);
    const cases: [Record<string, string>, string][] = [
      [{}, 'metrics_token_required'],
      [bearer('x'.repeat(TOKEN.length)), 'invalid_metrics_token'],
      [bearer(TOKEN.slice(0, -1)), 'invalid_metrics_token'],
      [bearer(`${TOKEN}x`), 'invalid_metrics_token'],
      [{ authorization: `Basic ${Buffer.from(`x:${TOKEN}`).toString('base64')}` }, 'invalid_metrics_token'],
      [{ authorization: TOKEN }, 'invalid_metrics_token'],
      // An API key is not the metrics token, however valid.
      [bearer(team.key), 'invalid_metrics_token'],
    ];
    for (const [headers, code] of cases) {
      const res = await fetch(`${s.url}/metrics`, { headers });
      assert.equal(res.status, 401, `${JSON.stringify(headers)}`);
      assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="metrics"');
      const body = await json(res);
      assert.equal(body.error.code, code, JSON.stringify(headers));
      assert.equal(body.error.request_id, res.headers.get('x-request-id'));
      assert.deepEqual([body.error.errors, body.error.details], [null, null]);
      assert.ok(!JSON.stringify(body).includes(TOKEN), 'the token is never echoed');
    }
    for (const scheme of ['Bearer', 'bearer', 'BEARER']) {
      const res = await fetch(`${s.url}/metrics`, { headers: { authorization: `${scheme} ${TOKEN}` } });
      assert.equal(res.status, 200, scheme);
      assert.equal(res.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
      assert.equal(res.headers.get('cache-control'), 'no-store');
      assert.match(res.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
      const text = await res.text();
      assert.match(text, /^# HELP toolrun_http_requests_total /m);
      assert.match(text, /^# TYPE toolrun_run_duration_seconds histogram$/m);
      assert.match(text, /^process_cpu_seconds_total \d/m);
      parseScrape(text);
    }
  });

  test('the token comparison hashes both sides, so length and prefixes cannot be told apart', () => {
    assert.equal(metricsTokenMatches(`Bearer ${TOKEN}`, TOKEN), true);
    for (const h of [undefined, '', 'Bearer', 'Bearer ', `Bearer  ${TOKEN} x`, `Token ${TOKEN}`, `Bearer ${TOKEN.toUpperCase()}`]) {
      assert.equal(metricsTokenMatches(h, TOKEN), false, String(h));
    }
  });

  test('needs no API key and spends nothing of any key\'s rate limit', async () => {
    const team = await makeTeam(database.db, { rate: 30 });
    // More scrapes than a 30-per-minute bucket holds: none is refused, none carries rate headers.
    for (let i = 0; i < 40; i++) {
      const res = await fetch(`${s.url}/metrics`, { headers: bearer(TOKEN) });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('ratelimit-limit'), null);
      await res.arrayBuffer();
    }
    const me = await callApi(s.url, team.key, 'GET', '/v1/me');
    assert.equal(me.status, 200);
    assert.equal(me.headers.get('ratelimit-remaining'), '29', 'the key\'s first request took the first token');
  });

  test('is not in the OpenAPI document', async () => {
    const doc = (await (await fetch(`${s.url}/v1/openapi.json`)).json()) as { paths: Record<string, unknown> };
    assert.ok(Object.keys(doc.paths).includes('/v1/me'));
    assert.deepEqual(
      Object.keys(doc.paths).filter((p) => p.includes('metrics')),
      [],
    );
  });
});

describe('GET /metrics: figures', () => {
  test('HTTP requests by route pattern, method and status: ids never become label values', async () => {
    const team = await makeTeam(database.db);
    const ids = [randomUUID(), randomUUID(), randomUUID()];
    const before = await scrape(s.url);
    const runsLabels = { route: '/v1/runs/:run_id', method: 'GET', status: '404' };
    const unmatched = { route: 'unmatched', method: 'GET', status: '404' };
    for (const id of ids.slice(0, 2)) assert.equal((await callApi(s.url, team.key, 'GET', `/v1/runs/${id}`)).status, 404);
    assert.equal((await fetch(`${s.url}/nothing/${ids[2]}`)).status, 404);
    const odd = await fetch(`${s.url}/v1/me`, { method: 'PROPFIND' });
    await odd.arrayBuffer();
    const after = await scrape(s.url);
    assert.equal((after.value('toolrun_http_requests_total', runsLabels) ?? 0) - (before.value('toolrun_http_requests_total', runsLabels) ?? 0), 2);
    assert.equal(
      (after.value('toolrun_http_request_duration_seconds_count', runsLabels) ?? 0) -
        (before.value('toolrun_http_request_duration_seconds_count', runsLabels) ?? 0),
      2,
    );
    assert.equal((after.value('toolrun_http_requests_total', unmatched) ?? 0) - (before.value('toolrun_http_requests_total', unmatched) ?? 0), 1);
    assert.ok(
      (after.value('toolrun_http_requests_total', { route: 'unmatched', method: 'OTHER', status: String(odd.status) }) ?? 0) >= 1,
      'a method outside the known set is counted as OTHER',
    );
    for (const id of ids) assert.ok(!after.text.includes(id), `id ${id} appears in the metrics`);
    assert.ok(!after.text.includes('PROPFIND'));
    assert.ok(!after.text.includes('/nothing'));
  });

  test('queue, Sparks and ledger figures come from PostgreSQL; run and webhook outcomes from the workers', async () => {
    const base = await scrape(s.url);
    assert.equal(base.value('toolrun_runs_queued', { tool: 'test_copy' }), 0, 'nothing queued before');
    const team = await makeTeam(database.db, { sparks: 1000, rate: 300, scopes: ['read', 'run', 'webhooks'] });
    const fileId = await uploadPng(team);
    const receiver = (await Receiver.start()).program(fail500, ok);
    const hook = await callApi(s.url, team.key, 'POST', '/v1/webhook-endpoints', { url: receiver.url(), events: ['run.failed'] });
    assert.equal(hook.status, 201, await hook.clone().text());

    const start = async (mode: string) => {
      const res = await callApi(s.url, team.key, 'POST', '/v1/tools/test_copy/runs', { inputs: { image: [fileId], mode } });
      assert.equal(res.status, 202, await res.clone().text());
      return (await res.json()) as { id: string; cost_sparks: number };
    };
    const runs = [await start('ok'), await start('ok'), await start('fail')];
    const price = runs[0]?.cost_sparks ?? 0;
    assert.ok(price > 0);
    // The oldest run was queued five minutes ago, as far as PostgreSQL knows.
    await database.db.pool.query(`UPDATE runs SET created_at = now() - interval '300 seconds' WHERE id = $1::uuid`, [runs[0]?.id]);

    const queued = await scrape(s.url);
    assert.equal(queued.value('toolrun_cluster_metrics_up'), 1);
    assert.equal(queued.value('toolrun_runs_queued', { tool: 'test_copy' }), 3);
    assert.equal(queued.value('toolrun_runs_running', { tool: 'test_copy' }), 0);
    const age = queued.value('toolrun_runs_queued_oldest_age_seconds', { tool: 'test_copy' }) ?? 0;
    assert.ok(age >= 300 && age < 900, `oldest queued age ${age}`);
    assert.equal(queued.value('toolrun_sparks_held'), 3 * price);
    const delta = (sc: Scrape, kind: string) => (sc.value('toolrun_ledger_sparks', { kind }) ?? NaN) - (base.value('toolrun_ledger_sparks', { kind }) ?? NaN);
    assert.deepEqual(
      ['granted', 'held', 'charged', 'released'].map((k) => delta(queued, k)),
      [1000, 3 * price, 0, 0],
    );

    const worker = new RunWorker({
      config: s.config,
      db: database.db,
      storage: await createStorage(s.config, database.db.pool),
      tools,
      media: resolveMediaBinaries(),
      logger: testLogger('silent'),
      concurrency: 2,
      metrics: s.metrics,
    });
    const webhooks = new WebhookWorker({ config: s.config, db: database.db, logger: testLogger('silent'), metrics: s.metrics });
    await worker.start();
    await webhooks.start();
    try {
      await waitFor('the three runs to end', async () => {
        const { rows } = await database.db.pool.query<{ n: number }>(
          `SELECT count(*)::integer AS n FROM runs WHERE id = ANY ($1::uuid[]) AND status IN ('succeeded', 'failed')`,
          [runs.map((r) => r.id)],
        );
        return rows[0]?.n === 3 ? true : undefined;
      }, 60_000);
      await waitFor('the run.failed delivery to be delivered on its retry', async () => {
        const { rows } = await database.db.pool.query<{ status: string }>(`SELECT status FROM webhook_deliveries WHERE team_id = $1::uuid`, [team.teamId]);
        return rows.length === 1 && rows[0]?.status === 'delivered' ? true : undefined;
      }, 60_000);
    } finally {
      await Promise.all([worker.stop(1000), webhooks.stop(1000)]);
    }

    const done = await scrape(s.url);
    const tool = 'test_copy';
    assert.equal(done.value('toolrun_runs_total', { tool, outcome: 'succeeded' }), 2);
    assert.equal(done.value('toolrun_runs_total', { tool, outcome: 'failed' }), 1);
    assert.equal(done.value('toolrun_run_duration_seconds_count', { tool, outcome: 'succeeded' }), 2);
    assert.equal(done.value('toolrun_run_duration_seconds_count', { tool, outcome: 'failed' }), 1);
    assert.equal(done.value('toolrun_run_duration_seconds_bucket', { tool, outcome: 'failed', le: '+Inf' }), 1);
    // Each phase once per execution that reached its end: the failed run stopped in its runner.
    const phases = ['inputs', 'runner', 'store', 'commit', 'check'].map((phase) => done.value('toolrun_run_phase_seconds_count', { tool, phase }));
    assert.deepEqual(phases, [3, 2, 2, 2, 2]);
    assert.ok((done.value('toolrun_run_phase_seconds_sum', { tool, phase: 'store' }) ?? 0) > 0);
    assert.equal(done.value('toolrun_webhook_attempts_total', { outcome: 'retry' }), 1);
    assert.equal(done.value('toolrun_webhook_attempts_total', { outcome: 'delivered' }), 1);
    assert.equal(done.value('toolrun_webhook_attempts_total', { outcome: 'given_up' }), undefined);
    assert.equal(done.value('toolrun_webhook_attempt_duration_seconds_count', { outcome: 'delivered' }), 1);
    assert.equal(done.value('toolrun_runs_queued', { tool }), 0);
    assert.equal(done.value('toolrun_runs_queued_oldest_age_seconds', { tool }), 0);
    assert.equal(done.value('toolrun_sparks_held'), 0);
    assert.equal(done.value('toolrun_webhook_deliveries_pending'), 0);
    assert.deepEqual(
      ['granted', 'held', 'charged', 'released'].map((k) => delta(done, k)),
      [1000, 3 * price, 2 * price, 3 * price],
    );
    // The ledger accounts for every Spark of every team, and the team's own balance agrees.
    const v = (kind: string) => done.value('toolrun_ledger_sparks', { kind }) ?? NaN;
    assert.equal(done.value('toolrun_sparks_available'), v('granted') - v('held') + v('released') - v('charged'));
    const me = (await (await callApi(s.url, team.key, 'GET', '/v1/me')).json()) as { sparks_available: number };
    assert.equal(me.sparks_available, 1000 - 2 * price);
  });

  test('with PostgreSQL unreachable the scrape still answers, says so, and shows no stale figures', async () => {
    const port = await freePort();
    const down: Db = createDb({ connectionString: `postgres://nobody@127.0.0.1:${port}/none`, logger: testLogger('silent'), max: 1 });
    const metrics = new Metrics({ db: down, logger: testLogger('silent'), toolIds: ['test_copy'], clusterRefreshMs: 0 });
    try {
      metrics.observeHttp('/v1/me', 'GET', 200, 0.01);
      const sc = parseScrape(await metrics.render());
      assert.equal(sc.value('toolrun_cluster_metrics_up'), 0);
      assert.equal(sc.value('toolrun_runs_queued', { tool: 'test_copy' }), undefined);
      assert.equal(sc.value('toolrun_sparks_available'), undefined);
      assert.equal(sc.value('toolrun_http_requests_total', { route: '/v1/me', method: 'GET', status: '200' }), 1);
    } finally {
      await down.close();
    }
  });
});

describe('metrics configuration', () => {
  const base = { TOOLRUN_ENV: 'test' };
  const refused = (env: Record<string, string>, variable: string, message: RegExp) => {
    assert.throws(
      () => loadConfig({ ...base, ...env }),
      (err: unknown) => err instanceof ConfigError && err.variable === variable && message.test(err.message),
      JSON.stringify(env),
    );
  };

  test('off by default; a token and a worker port are read and checked loudly, by name', () => {
    assert.deepEqual(loadConfig(base).metrics, { token: null, port: null });
    assert.deepEqual(loadConfig({ ...base, TOOLRUN_METRICS_TOKEN: TOKEN, TOOLRUN_METRICS_PORT: '9464' }).metrics, { token: TOKEN, port: 9464 });
    refused({ TOOLRUN_METRICS_TOKEN: 'short' }, 'TOOLRUN_METRICS_TOKEN', /^TOOLRUN_METRICS_TOKEN: must be 16 to 512 characters/);
    refused({ TOOLRUN_METRICS_TOKEN: `${TOKEN} x` }, 'TOOLRUN_METRICS_TOKEN', /with others among them/);
    refused({ TOOLRUN_METRICS_PORT: '9464' }, 'TOOLRUN_METRICS_PORT', /needs TOOLRUN_METRICS_TOKEN/);
    refused({ TOOLRUN_METRICS_TOKEN: TOKEN, TOOLRUN_METRICS_PORT: 'nine' }, 'TOOLRUN_METRICS_PORT', /whole number from 0 to 65535/);
    refused({ TOOLRUN_METRICS_TOKEN: TOKEN, TOOLRUN_METRICS_PORT: '70000' }, 'TOOLRUN_METRICS_PORT', /whole number from 0 to 65535/);
  });
});

/** A 640x480 PNG uploaded and completed by the team; its file id. */
async function uploadPng(team: TeamFixture): Promise<string> {
  const png = await makePng(640, 480);
  const res = await callApi(s.url, team.key, 'POST', '/v1/files/upload-url', { file_name: 'a.png', mime_type: 'image/png', size_bytes: png.length });
  assert.equal(res.status, 201, await res.clone().text());
  const up = (await res.json()) as Upload;
  const parts = await uploadAll(up, png);
  const done = await callApi(s.url, team.key, 'POST', `/v1/files/${up.file_id}/complete`, { upload_id: up.upload_id, parts });
  assert.equal(((await done.json()) as { status: string }).status, 'ready');
  return up.file_id;
}
