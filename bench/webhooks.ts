/**
 * `npm run bench:webhooks`: webhook deliveries (issue 6, "Benchmarks"; issue 16 moved the baseline
 * to keep-alive). Not a test.
 *
 * Three HTTPS receivers on 127.0.0.1 (bench/webhook-receivers.ts: the tests' Receiver in a process
 * of its own, with a self-signed certificate made here with `selfsigned` as scripts/test.js makes
 * it, trusted by the API child through NODE_EXTRA_CA_CERTS) are subscribed to all run events. The
 * API child (bench/app-server.ts `api`, TOOLRUN_ALLOW_PRIVATE_NETWORK=1) runs the workers as
 * `toolrun serve` does. Runs are of `bench_noop` (no inputs, no outputs): each success commits its
 * run.succeeded event, whose fan-out trigger makes one delivery per endpoint.
 *
 *   live   BENCH_WEBHOOK_RUNS runs started from BENCH_CLIENTS clients and finishing as the
 *          in-process RunWorker gets to them; latency = receipt (receiver's Date.now()) - the
 *          event's run_events.created_at, i.e. from the start of the run's final transaction
 *          (its commit is a few ms later, so this errs high); deliveries/s from the first event to
 *          the last receipt. Split with webhook_attempts.attempted_at: queue (event -> attempt
 *          begins) and send (attempt begins -> receipt).
 *   drain  the same number of runs finished with only the RunWorker beside the API, so their
 *          deliveries wait; then the WebhookWorker is started and works the backlog off:
 *          deliveries/s from the first receipt to the last (the pipeline's own capacity).
 *   plain  the baseline: the same number of signed POSTs of a real event body from this process
 *          over keep-alive connections (one https.Agent, as the WebhookWorker keeps one per
 *          endpoint), with the concurrency the WebhookWorker has for three endpoints:
 *          min(TOOLRUN_WEBHOOK_CONCURRENCY, 3 x max(1, floor(TOOLRUN_WEBHOOK_CONCURRENCY / 4))). The
 *          same POSTs on a new TLS connection each (agent: false) are a diagnostic.
 *
 * Environment: DATABASE_URL (else an embedded PostgreSQL), BENCH_WEBHOOK_RUNS (1000), BENCH_CLIENTS
 * (4), BENCH_DRAIN (1; 0 skips it), BENCH_LOG_LEVEL (warn), BENCH_MAX_MINUTES (10); TOOLRUN_WEBHOOK_CONCURRENCY passes through.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import pg from 'pg';
import selfsigned from 'selfsigned';
import { loadConfig } from '../src/config/config.js';
import { signatureHeader } from '../src/webhooks/signing.js';
import { eventBody } from '../src/webhooks/worker.js';
import { Api, prepareTeam, waitFinal } from './lib/api.js';
import { cpuWithChildren, descendantsCpuSeconds, forkChild, startAppChild, type Child } from './lib/app-children.js';
import { NOOP_TOOL } from './lib/bench-tools.js';
import { compactSamples, envInt, figure, finish, fmt, loadNote, percentile, resultHeader, sleep, table, type BenchResult, runBench } from './lib/report.js';
import { serviceEnv, withBenchService, type BenchService } from './lib/service.js';
import { inFlight } from './lib/upload-io.js';
import type { Arrival, ReceiverChildMessage, ReceiverParentMessage } from './webhook-receivers.js';

// Issue 16: the drain at >= 0.5 of plain signed POSTs with keep-alive (it was 0.5 of new TLS each).
const TARGETS = { p50Ms: 50, p99Ms: 250, rateRatio: 0.5 };
const EVENTS = ['run.succeeded', 'run.failed', 'run.canceled'];
const conc = loadConfig(process.env).webhooks.concurrency;
const settings = {
  runs: envInt('BENCH_WEBHOOK_RUNS', 1000, 1),
  clients: envInt('BENCH_CLIENTS', 4, 1),
  drain: process.env.BENCH_DRAIN !== '0',
  endpoints: 3,
  webhookConcurrency: conc,
  perEndpointLimit: Math.max(1, Math.floor(conc / 4)),
  apiLogLevel: process.env.BENCH_LOG_LEVEL || 'warn',
  timeoutMs: 600_000,
};
const inFlightLimit = Math.min(conc, settings.endpoints * settings.perEndpointLimit);
type Receivers = Child<ReceiverParentMessage, ReceiverChildMessage>;

/** CPU seconds per process group: the API child (workers included), the receivers, this process, and PostgreSQL (the rest of the tree). */
interface CpuSplit {
  api: number;
  receivers: number;
  bench: number;
  pg: number;
}

/**
 * CPU seconds used meanwhile, per process: the same wall time says little on a shared machine,
 * CPU per delivery says where the pipeline's cost is (and moves far less with others' load).
 */
function cpuMeter(apiPid: number, receiversPid: number): () => CpuSplit {
  const read = () => {
    const api = cpuWithChildren(apiPid);
    const receivers = cpuWithChildren(receiversPid);
    const own = process.cpuUsage();
    return { api, receivers, bench: (own.user + own.system) / 1e6, all: descendantsCpuSeconds(process.pid) };
  };
  const a = read();
  return () => {
    const b = read();
    const api = b.api - a.api;
    const receivers = b.receivers - a.receivers;
    return { api, receivers, bench: b.bench - a.bench, pg: Math.max(0, b.all - a.all - api - receivers) };
  };
}

const perDelivery = (c: CpuSplit, n: number) =>
  `API ${fmt((1000 * c.api) / n, 3)}, PostgreSQL ${fmt((1000 * c.pg) / n, 3)}, receivers ${fmt((1000 * c.receivers) / n, 3)}, bench process ${fmt((1000 * c.bench) / n, 3)} ms CPU per delivery`;

async function ask<T extends ReceiverChildMessage['type']>(r: Receivers, m: ReceiverParentMessage, reply: T) {
  const p = r.next(reply, 30_000);
  r.send(m);
  return p;
}

async function arrivals(r: Receivers, n: number): Promise<Arrival[]> {
  const deadline = Date.now() + settings.timeoutMs;
  while ((await ask(r, { type: 'count' }, 'count')).count < n) {
    if (Date.now() > deadline) throw new Error(`fewer than ${n} webhook requests arrived in time`);
    await sleep(200);
  }
  return (await ask(r, { type: 'dump' }, 'records')).records;
}

async function startRuns(api: Api, n: number): Promise<string[]> {
  return (await inFlight(n, settings.clients, () => api.startRun(NOOP_TOOL, {}))).map((r) => r.id);
}

/** The signed-POST baseline: n posts, `limit` in flight, spread over the receivers; rate and each POST's latency (request -> response end). */
async function plainLoop(urls: string[], n: number, limit: number, body: Buffer, secret: string, ca: string, keepAlive: boolean): Promise<{ perS: number; latencyMs: number[] }> {
  const agent = keepAlive ? new https.Agent({ keepAlive: true, ca }) : false;
  const latencyMs: number[] = [];
  const post = (url: string) =>
    new Promise<void>((resolve, reject) => {
      const p0 = performance.now();
      const headers = {
        'content-type': 'application/json',
        'content-length': String(body.length),
        'user-agent': 'Service-Webhooks/1',
        'service-event': 'run.succeeded',
        'service-delivery': randomUUID(),
        'service-signature': signatureHeader(secret, body, Math.floor(Date.now() / 1000)),
      };
      const req = https.request(url, { method: 'POST', agent, ca, headers }, (res) => {
        res.resume();
        res.on('end', () => {
          latencyMs.push(performance.now() - p0);
          if ((res.statusCode ?? 0) < 300) resolve();
          else reject(new Error(`answered ${String(res.statusCode)}`));
        });
      });
      req.on('error', reject);
      req.end(body);
    });
  const t0 = performance.now();
  await inFlight(n, limit, (i) => post(urls[i % urls.length] ?? ''));
  if (agent) agent.destroy();
  return { perS: n / ((performance.now() - t0) / 1000), latencyMs };
}

const BUCKETS = [10, 25, 50, 100, 250, 500, 900, 1100];

function histogram(xs: number[]): string {
  const counts = BUCKETS.map((b, i) => xs.filter((x) => x < b && x >= (BUCKETS[i - 1] ?? -Infinity)).length);
  return [...BUCKETS.map((b, i) => `<${b}: ${counts[i] ?? 0}`), `>=${BUCKETS.at(-1) ?? 0}: ${xs.filter((x) => x >= (BUCKETS.at(-1) ?? 0)).length}`].join(', ');
}

interface EventRow {
  id: string;
  created: number;
  /** When each delivery's first attempt began, by delivery id. */
  attempts: Map<string, number>;
}

async function eventRows(pool: pg.Pool, runIds: string[]): Promise<Map<string, EventRow>> {
  const { rows } = await pool.query<{ id: string; created: number; delivery: string | null; attempted: number | null }>(
    `SELECT e.id, extract(epoch FROM e.created_at) * 1000 AS created, d.id AS delivery, extract(epoch FROM min(a.attempted_at)) * 1000 AS attempted
       FROM run_events e LEFT JOIN webhook_deliveries d ON d.event_id = e.id LEFT JOIN webhook_attempts a ON a.delivery_id = d.id
      WHERE e.run_id = ANY ($1::uuid[]) GROUP BY e.id, e.created_at, d.id`,
    [runIds],
  );
  const out = new Map<string, EventRow>();
  for (const r of rows) {
    const e = out.get(r.id) ?? { id: r.id, created: Number(r.created), attempts: new Map<string, number>() };
    if (r.delivery && r.attempted !== null) e.attempts.set(r.delivery, Number(r.attempted));
    out.set(r.id, e);
  }
  return out;
}

async function main(svc: BenchService): Promise<void> {
  const { dir, logger } = svc;
  const loadBefore = loadNote();
  process.stdout.write(`setting up (${loadBefore.text})...\n`);
  const pems = await selfsigned.generate([{ name: 'commonName', value: 'localhost' }], {
    keySize: 2048,
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: true },
      { name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, { type: 7, ip: '127.0.0.1' }] },
    ],
  });
  const certFile = path.join(dir, 'cert.pem');
  fs.writeFileSync(certFile, pems.cert);
  fs.writeFileSync(path.join(dir, 'key.pem'), pems.private);
  const receivers: Receivers = svc.child('receivers', forkChild<ReceiverParentMessage, ReceiverChildMessage>('webhook-receivers.ts', [], {
    ...process.env,
    BENCH_RECEIVERS: String(settings.endpoints),
    TEST_TLS_CERT_FILE: certFile,
    TEST_TLS_KEY_FILE: path.join(dir, 'key.pem'),
  }));
  const { urls } = await receivers.next('ready', 60_000);
  const database = await svc.database();
  await prepareTeam(database.url, database.keyId, logger, { scopes: ['read', 'run', 'webhooks'] });
  const pool = svc.defer(new pg.Pool({ connectionString: database.url, max: 2 }), (p) => p.end());
  const apiChild = svc.child('api', await startAppChild('api', serviceEnv(svc, database, {
    logLevel: settings.apiLogLevel,
    set: { TOOLRUN_ALLOW_PRIVATE_NETWORK: '1', NODE_EXTRA_CA_CERTS: certFile, BENCH_WORKERS: 'all' },
  })));
  const api = new Api(apiChild.url, database.key);
  const secrets: string[] = [];
  for (const url of urls) secrets.push((await api.call<{ signing_secret: string }>('POST', '/v1/webhook-endpoints', { url, events: EVENTS }, 201)).signing_secret);
  const n = settings.runs * settings.endpoints;
  // Warm-up: connections, JIT, prepared plans.
  await arrivals(receivers, (await startRuns(api, 20)).length * settings.endpoints);
  await ask(receivers, { type: 'reset' }, 'reset-done');

  process.stdout.write(`  live: ${settings.runs} runs...\n`);
  const liveIds = await startRuns(api, settings.runs);
  const live = await arrivals(receivers, n);
  const runs = await waitFinal(pool, liveIds, settings.timeoutMs);
  const events = await eventRows(pool, liveIds);
  const lat: number[] = [];
  const queue: number[] = [];
  const sendMs: number[] = [];
  for (const a of live) {
    const e = events.get(a.eventId);
    if (!e) throw new Error(`a delivery of an unknown event ${a.eventId}`);
    lat.push(a.at - e.created);
    const attempted = e.attempts.get(a.delivery);
    if (attempted !== undefined) {
      queue.push(attempted - e.created);
      sendMs.push(a.at - attempted);
    }
  }
  const created = [...events.values()].map((e) => e.created);
  const lastAt = Math.max(...live.map((a) => a.at));
  const liveRate = live.length / ((lastAt - Math.min(...created)) / 1000);
  const produced = runs.length / ((Math.max(...created) - Math.min(...runs.map((r) => r.created))) / 1000);
  await ask(receivers, { type: 'reset' }, 'reset-done');

  let drainRate = Number.NaN;
  let drainThirds: number[] = [];
  let drainCpu: CpuSplit | null = null;
  if (settings.drain) {
    process.stdout.write(`  drain: ${settings.runs} runs with no webhook worker, then the backlog...\n`);
    await apiChild.setWorkers('runs');
    const ids = await startRuns(api, settings.runs);
    await waitFinal(pool, ids, settings.timeoutMs);
    const meter = cpuMeter(apiChild.pid, receivers.pid);
    await apiChild.setWorkers('all');
    const drained = await arrivals(receivers, n);
    drainCpu = meter();
    const ats = drained.map((a) => a.at).sort((a, b) => a - b);
    drainRate = (ats.length - 1) / (((ats.at(-1) ?? 0) - (ats[0] ?? 0)) / 1000);
    // Rate per third of the backlog: a claim that grows with the backlog shows as a rising rate.
    const third = Math.floor(ats.length / 3);
    drainThirds = [0, 1, 2].map((k) => third / (((ats[(k + 1) * third - 1] ?? 0) - (ats[k * third] ?? 0)) / 1000));
    await ask(receivers, { type: 'reset' }, 'reset-done');
  }

  process.stdout.write(`  plain loop: ${n} signed POSTs, ${inFlightLimit} in flight...\n`);
  const sample = await pool.query<{ id: string; type: string; created_at: Date; payload: unknown }>('SELECT id, type, created_at, payload FROM run_events LIMIT 1');
  const ev = sample.rows[0];
  if (!ev) throw new Error('no event to copy');
  const body = eventBody({ event_id: ev.id, event_type: ev.type, event_created_at: ev.created_at, payload: ev.payload });
  const plainMeter = cpuMeter(apiChild.pid, receivers.pid);
  const plain = await plainLoop(urls, n, inFlightLimit, body, secrets[0] ?? '', pems.cert, true);
  const plainCpu = plainMeter();
  const plainRate = plain.perS;
  const newTlsRate = (await plainLoop(urls, n, inFlightLimit, body, secrets[0] ?? '', pems.cert, false)).perS;
  api.close();
  const loadAfter = loadNote();
  await svc.cleanup();

  const p50 = percentile(lat, 50);
  const p99 = percentile(lat, 99);
  const ratio = (settings.drain ? drainRate : liveRate) / plainRate;
  const lines = [
    '',
    `Webhooks: ${settings.runs} ${NOOP_TOOL} runs x ${settings.endpoints} HTTPS endpoints on loopback; TOOLRUN_WEBHOOK_CONCURRENCY ${conc}, ` +
      `${settings.perEndpointLimit} per endpoint -> ${inFlightLimit} in flight`,
    table(
      ['phase', 'deliveries', 'p50 ms', 'p99 ms', 'max ms', '> 900 ms', 'per s', 'vs plain'],
      [
        ['live: event -> receipt', String(live.length), fmt(p50, 1), fmt(p99, 1), fmt(Math.max(...lat), 0), String(lat.filter((x) => x > 900).length), fmt(liveRate, 0), fmt(liveRate / plainRate, 2)],
        ['  queue: event -> attempt begins', String(queue.length), fmt(percentile(queue, 50), 1), fmt(percentile(queue, 99), 1), fmt(Math.max(...queue), 0), '', '', ''],
        ['  send: attempt begins -> receipt', String(sendMs.length), fmt(percentile(sendMs, 50), 1), fmt(percentile(sendMs, 99), 1), fmt(Math.max(...sendMs), 0), '', '', ''],
        ['drain: backlog of deliveries', settings.drain ? String(n) : 'skipped', '', '', '', '', fmt(drainRate, 0), fmt(drainRate / plainRate, 2)],
        ['baseline: plain signed POSTs, keep-alive', String(n), '', '', '', '', fmt(plainRate, 0), '1.00'],
        ['diag: plain signed POSTs, new TLS each', String(n), '', '', '', '', fmt(newTlsRate, 0), fmt(newTlsRate / plainRate, 2)],
      ],
    ),
    `live latency histogram (ms): ${histogram(lat)}`,
    ...(settings.drain ? [`drain rate by thirds of the backlog (oldest first): ${drainThirds.map((x) => fmt(x, 0)).join(' / ')} per s`] : []),
    ...(drainCpu ? [`drain CPU (worker start -> last receipt): ${perDelivery(drainCpu, n)}`] : []),
    `plain CPU (keep-alive loop): ${perDelivery(plainCpu, n)}`,
    `runs finished at ${fmt(produced, 0)}/s in the live phase, i.e. ${fmt(produced * settings.endpoints, 0)} deliveries/s offered: the live rate cannot exceed that.`,
    `plain signed POST latency (keep-alive, ${inFlightLimit} in flight): p50 ${fmt(percentile(plain.latencyMs, 50), 1)} ms, p99 ${fmt(percentile(plain.latencyMs, 99), 1)} ms`,
    `load: before ${loadBefore.text}; after ${loadAfter.text}`,
    '',
  ];
  process.stdout.write(lines.join('\n') + '\n');
  const plainLatency = (p: number) => ({ label: `plain signed POST p${p}, keep-alive`, value: percentile(plain.latencyMs, p) });
  const plainPerS = { label: 'plain signed POSTs, keep-alive', value: plainRate };
  const rateFigure = settings.drain
    ? { name: 'drain_rate', figure: 'deliveries per second working off a backlog', value: drainRate }
    : { name: 'live_rate', figure: 'deliveries per second, live', value: liveRate };
  const result: BenchResult = {
    ...resultHeader('webhooks', `Webhooks: ${settings.runs} runs x ${settings.endpoints} HTTPS endpoints on loopback against plain signed POSTs`,
      { before: loadBefore, after: loadAfter }, database, { ...settings, inFlightLimit }),
    figures: [
      figure({ name: 'latency_p50', figure: 'delivery latency p50 (event -> receipt), live', unit: 'ms', value: p50, baseline: plainLatency(50),
        target: { on: 'value', op: '<', limit: TARGETS.p50Ms } }),
      figure({ name: 'latency_p99', figure: 'delivery latency p99 (event -> receipt), live', unit: 'ms', value: p99, baseline: plainLatency(99),
        target: { on: 'value', op: '<', limit: TARGETS.p99Ms } }),
      figure({ ...rateFigure, unit: 'deliveries/s', baseline: plainPerS, target: { on: 'ratio', op: '>=', limit: TARGETS.rateRatio } }),
      ...(settings.drain ? [figure({ name: 'live_rate', figure: 'deliveries per second, live (bounded by how fast runs finish)', unit: 'deliveries/s', value: liveRate, baseline: plainPerS })] : []),
      figure({ name: 'new_tls_rate', figure: 'diag: plain signed POSTs, a new TLS connection each', unit: 'deliveries/s', value: newTlsRate, baseline: plainPerS }),
    ],
    charts: [
      {
        id: 'latency',
        title: `Webhook delivery latency, live (${live.length} deliveries)`,
        unit: 'ms',
        series: [
          { label: 'event -> receipt', role: 'measured', samples: compactSamples(lat) },
          { label: 'attempt begins -> receipt', role: 'measured', samples: compactSamples(sendMs) },
          { label: `plain signed POST, keep-alive, ${inFlightLimit} in flight`, role: 'baseline', samples: compactSamples(plain.latencyMs) },
        ],
      },
    ],
    notes: [
      `Runs of ${NOOP_TOOL}; each success's event fans out to ${settings.endpoints} endpoints. TOOLRUN_WEBHOOK_CONCURRENCY ${conc}, ` +
        `${settings.perEndpointLimit} per endpoint, so ${inFlightLimit} in flight; the baseline POSTs from the benchmark process with the same concurrency over keep-alive connections, as the service sends.`,
      'Latency runs from the event row (the start of the run\'s final transaction) to the receiver having the whole body, so it errs high by the commit.',
      `Runs finished at ${fmt(produced, 0)}/s in the live phase (${fmt(produced * settings.endpoints, 0)} deliveries/s offered), which bounds the live rate; ` +
        `the rate target is on ${settings.drain ? 'the drain of a backlog, the pipeline\'s own capacity' : 'the live rate (drain skipped)'}.`,
      ...(settings.drain ? [`Drain rate by thirds of the backlog (oldest first): ${drainThirds.map((x) => fmt(x, 0)).join(' / ')} per s.`] : []),
    ],
    details: {
      live: { deliveries: live.length, latency_ms: { p50, p99, max: Math.max(...lat), histogram: histogram(lat) }, queue_p50_ms: percentile(queue, 50), send_p50_ms: percentile(sendMs, 50), per_s: liveRate, runs_per_s: produced },
      drain: { per_s: drainRate, per_s_by_third: drainThirds, cpu_s: drainCpu },
      plain: { cpu_s: plainCpu, per_s: plainRate, new_tls_per_s: newTlsRate, latency_p50_ms: percentile(plain.latencyMs, 50), latency_p99_ms: percentile(plain.latencyMs, 99) },
      targets: { ...TARGETS, ratio },
    },
  };
  finish(result);
}

runBench('webhooks', () => withBenchService('webhooks', {}, main));
