/**
 * `npm run bench:keys`: what invalid API keys can learn and do (issue 8, "Keys"). Not a test.
 *
 * 1. Timing. GET /v1/me with keys of four classes, sent one at a time on one keep-alive connection
 *    in a shuffled (interleaved) order, a fresh random key per request: a valid key's prefix with
 *    a wrong secret, an unknown prefix (the baseline), a malformed key, and the valid key (for
 *    scale). The first two must be indistinguishable: both are hashed and looked up by hash in
 *    PostgreSQL (src/auth: the prefix is never used to find a key). PASS when the difference is
 *    within noise: the two-sided Mann-Whitney U test finds no difference at the 1% level, or the
 *    95% bootstrap interval of the median difference lies within +-BENCH_EQUIVALENCE_PCT (2) % of
 *    the baseline median (an equivalence test: a difference too small to matter, proven).
 *    Requests are paced (1 ms apart) to stay under the server's rate for unrecognised keys.
 *    Malformed keys answer without a database lookup, faster: their shape is public, so that
 *    tells nothing about any key.
 * 2. Flood. Valid traffic's throughput while BENCH_FLOOD_CONNECTIONS connections send random bad
 *    keys as fast as they can, against valid traffic alone, rounds interleaved. Target >= 0.5.
 *    Bad keys answer 401, or 429 once they wait longer than the server lets them queue.
 *
 * Environment: DATABASE_URL (else an embedded PostgreSQL in a temp dir), BENCH_KEY_SAMPLES (per
 * class, 3000), BENCH_WARMUP_REQUESTS (300), BENCH_ROUNDS (3), BENCH_DURATION (s per phase, 8),
 * BENCH_VALID_CONNECTIONS (8), BENCH_FLOOD_CONNECTIONS (32), BENCH_EQUIVALENCE_PCT (2),
 * BENCH_LOG_LEVEL (the API's LOG_LEVEL, warn).
 */
import { randomInt } from 'node:crypto';
import http from 'node:http';
import { startApiChild } from './lib/children.js';
import { compactSamples, envInt, envNum, figure, finish, fmt, loadNote, median, percentile, resultHeader, sleep, table, type BenchResult, type Figure, runBench } from './lib/report.js';
import { withBenchService, type BenchService } from './lib/service.js';

const FLOOD_TARGET = 0.5;
/** Significance level of the timing test: below it, the two classes differ. */
const ALPHA = 0.01;
const settings = {
  samplesPerClass: envInt('BENCH_KEY_SAMPLES', 3000, 50),
  warmupRequests: envInt('BENCH_WARMUP_REQUESTS', 300),
  rounds: envInt('BENCH_ROUNDS', 3, 1),
  durationS: envNum('BENCH_DURATION', 8, 1),
  validConnections: envInt('BENCH_VALID_CONNECTIONS', 8, 1),
  floodConnections: envInt('BENCH_FLOOD_CONNECTIONS', 32, 1),
  equivalencePct: envNum('BENCH_EQUIVALENCE_PCT', 2, 0.1),
  bootstrap: 2000,
  apiLogLevel: process.env.BENCH_LOG_LEVEL || 'warn',
};

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const randomText = (n: number) => Array.from({ length: n }, () => ALNUM[randomInt(ALNUM.length)]).join('');

type KeyClass = 'wrong_secret' | 'unknown_prefix' | 'malformed' | 'valid';
const CLASSES: { id: KeyClass; label: string; status: number }[] = [
  { id: 'unknown_prefix', label: 'unknown prefix (baseline)', status: 401 },
  { id: 'wrong_secret', label: "valid key's prefix, wrong secret", status: 401 },
  { id: 'malformed', label: 'malformed key', status: 401 },
  { id: 'valid', label: 'valid key (for scale)', status: 200 },
];

function keyOf(cls: KeyClass, valid: string): string {
  switch (cls) {
    case 'valid':
      return valid;
    case 'wrong_secret':
      return `${valid.slice(0, 'svc_test_'.length + 8)}${randomText(32)}`;
    case 'unknown_prefix':
      return `svc_test_${randomText(40)}`;
    case 'malformed':
      // Each of the shapes the parser refuses: too short, too long, a character outside the alphabet.
      return [`svc_test_${randomText(39)}`, `svc_test_${randomText(41)}`, `svc_test_${randomText(20)}-${randomText(19)}`][randomInt(3)] ?? '';
  }
}

/** One GET with the key; resolves with the status and the milliseconds to the last byte. */
function timedGet(agent: http.Agent, url: URL, key: string): Promise<{ status: number; ms: number }> {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    const req = http.get({ host: url.hostname, port: url.port, path: url.pathname, agent, headers: { authorization: `Bearer ${key}` } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: Number(process.hrtime.bigint() - start) / 1e6 }));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

function shuffled<T>(xs: T[]): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = randomInt(i + 1);
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

/** Two-sided Mann-Whitney U test (normal approximation, ties corrected): the p-value. */
function mannWhitneyP(a: number[], b: number[]): number {
  const all = [...a.map((v) => ({ v, g: 0 })), ...b.map((v) => ({ v, g: 1 }))].sort((x, y) => x.v - y.v);
  const n = all.length;
  let rankSumA = 0;
  let tieTerm = 0;
  for (let i = 0; i < n; ) {
    let j = i;
    while (j + 1 < n && all[j + 1]?.v === all[i]?.v) j++;
    const rank = (i + j) / 2 + 1;
    for (let k = i; k <= j; k++) if (all[k]?.g === 0) rankSumA += rank;
    const t = j - i + 1;
    tieTerm += t ** 3 - t;
    i = j + 1;
  }
  const n1 = a.length;
  const n2 = b.length;
  const u = rankSumA - (n1 * (n1 + 1)) / 2;
  const sigma = Math.sqrt(((n1 * n2) / 12) * (n + 1 - tieTerm / (n * (n - 1))));
  const z = sigma === 0 ? 0 : Math.abs(u - (n1 * n2) / 2) / sigma;
  return 2 * (1 - normalCdf(z));
}

/** Φ(z), from the Abramowitz-Stegun 7.1.26 approximation of erf (error < 1.5e-7). */
function normalCdf(z: number): number {
  const x = Math.abs(z) / Math.SQRT2;
  const t = 1 / (1 + 0.3275911 * x);
  const erf = 1 - ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-x * x);
  return z >= 0 ? (1 + erf) / 2 : (1 - erf) / 2;
}

/** 95% percentile-bootstrap interval of median(a) - median(b). */
function bootstrapMedianDiff(a: number[], b: number[], resamples: number): { low: number; high: number } {
  const resampledMedian = (xs: number[]) => median(Array.from({ length: xs.length }, () => xs[randomInt(xs.length)] ?? 0));
  const diffs = Array.from({ length: resamples }, () => resampledMedian(a) - resampledMedian(b)).sort((x, y) => x - y);
  return { low: percentile(diffs, 2.5), high: percentile(diffs, 97.5) };
}

/** The timing test passes on either criterion: no significant difference, or a proven negligible one. */
function timingVerdict(f: Figure, equivalent: boolean): Figure {
  return f.pass === false && equivalent ? { ...f, pass: true } : f;
}

interface LoadResult {
  ok: number;
  other: number;
  latencies: number[];
}

/** `connections` loops sending GETs back to back until the deadline; counts answers with `expect`. */
async function load(url: URL, connections: number, durationS: number, key: () => string, expect: number[]): Promise<LoadResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const deadline = Date.now() + durationS * 1000;
  const result: LoadResult = { ok: 0, other: 0, latencies: [] };
  const loop = async () => {
    while (Date.now() < deadline) {
      const r = await timedGet(agent, url, key()).catch(() => ({ status: 0, ms: 0 }));
      if (expect.includes(r.status)) {
        result.ok++;
        result.latencies.push(r.ms);
      } else result.other++;
    }
  };
  await Promise.all(Array.from({ length: connections }, loop));
  agent.destroy();
  return result;
}

async function main(svc: BenchService): Promise<void> {
  const loadBefore = loadNote();
  process.stdout.write(`setting up the database and the API server (${loadBefore.text})...\n`);
  const database = await svc.database();
  const api = svc.child('api', await startApiChild(database.url, settings.apiLogLevel));
  const url = new URL('/v1/me', api.url);
  const valid = database.key;

  // 1. Timing: one connection, one request at a time, classes interleaved at random.
  process.stdout.write(`timing: ${settings.samplesPerClass} requests per key class, interleaved, after ${settings.warmupRequests} warm-up requests\n`);
  const one = new http.Agent({ keepAlive: true, maxSockets: 1 });
  for (let i = 0; i < settings.warmupRequests; i++) await timedGet(one, url, keyOf(CLASSES[i % CLASSES.length]?.id ?? 'valid', valid));
  const samples = new Map<KeyClass, number[]>(CLASSES.map((c) => [c.id, []]));
  let wrongStatus = 0;
  const schedule = shuffled(CLASSES.flatMap((c) => Array.from({ length: settings.samplesPerClass }, () => c)));
  for (const [i, c] of schedule.entries()) {
    if (i % 1000 === 0) await database.refill();
    const r = await timedGet(one, url, keyOf(c.id, valid));
    if (r.status !== c.status) wrongStatus++;
    samples.get(c.id)?.push(r.ms);
    // A pause between requests keeps the bad keys under the server's rate for keys it has not
    // seen lately (TOOLRUN_UNRECOGNISED_KEYS_PER_SECOND), so this measures the lookup, not a queue.
    await sleep(1);
  }
  one.destroy();
  const of = (id: KeyClass) => samples.get(id) ?? [];
  const base = of('unknown_prefix');
  const baseMedian = median(base);
  const ci = bootstrapMedianDiff(of('wrong_secret'), base, settings.bootstrap);
  const p = mannWhitneyP(of('wrong_secret'), base);
  const worstPct = (Math.max(Math.abs(ci.low), Math.abs(ci.high)) / baseMedian) * 100;
  const equivalent = worstPct <= settings.equivalencePct;
  process.stdout.write(
    `${table(
      ['key class', 'n', 'median ms', 'p90 ms', 'ratio to baseline'],
      CLASSES.map((c) => [c.label, String(of(c.id).length), fmt(median(of(c.id)), 3), fmt(percentile(of(c.id), 90), 3), fmt(median(of(c.id)) / baseMedian, 3)]),
    )}\n` +
      `wrong secret - unknown prefix: median difference 95% CI [${fmt(ci.low * 1000, 1)}, ${fmt(ci.high * 1000, 1)}] µs ` +
      `(within +-${fmt(worstPct, 2)}% of the baseline median; equivalence margin +-${settings.equivalencePct}%), Mann-Whitney p = ${p.toPrecision(3)} ` +
      `(below ${ALPHA}: the classes differ)\n`,
  );

  // 2. Flood: valid traffic alone, then with bad keys alongside, round after round.
  const alone: LoadResult[] = [];
  const flooded: LoadResult[] = [];
  const floods: LoadResult[] = [];
  const badKey = () => keyOf(randomInt(2) ? 'wrong_secret' : 'unknown_prefix', valid);
  for (let round = 1; round <= settings.rounds; round++) {
    await database.refill();
    alone.push(await load(url, settings.validConnections, settings.durationS, () => valid, [200]));
    await sleep(1000);
    await database.refill();
    const [v, f] = await Promise.all([
      load(url, settings.validConnections, settings.durationS, () => valid, [200]),
      load(url, settings.floodConnections, settings.durationS, badKey, [401, 429]),
    ]);
    flooded.push(v);
    floods.push(f);
    const rate = (r: LoadResult) => r.ok / settings.durationS;
    process.stdout.write(
      `  round ${round}: valid alone ${rate(alone.at(-1) as LoadResult).toFixed(0)} req/s; under flood ${rate(v).toFixed(0)} req/s ` +
        `while bad keys got ${rate(f).toFixed(0)} answers/s\n`,
    );
    await sleep(1000);
  }
  const rps = (rs: LoadResult[]) => median(rs.map((r) => r.ok / settings.durationS));
  const failures = [...alone, ...flooded, ...floods].reduce((n, r) => n + r.other, 0);
  const floodInvalid = failures ? `${failures} requests got an unexpected answer` : null;
  const timingInvalid = wrongStatus ? `${wrongStatus} timing requests got an unexpected status` : null;
  const latencies = (rs: LoadResult[]) => rs.flatMap((r) => r.latencies);
  const baseline = (label: string, value: number) => ({ label, value });

  const result: BenchResult = {
    ...resultHeader('keys', 'Keys: invalid keys cannot be told apart by timing; a flood of bad keys and valid traffic', { before: loadBefore, after: loadNote() }, database, settings),
    figures: [
      timingVerdict(
        figure({
          name: 'wrong_secret_vs_unknown_p',
          figure: 'timing: valid prefix + wrong secret vs unknown prefix, Mann-Whitney p (two-sided)',
          unit: '',
          value: p,
          target: { on: 'value', op: '>=', limit: ALPHA },
          invalid: timingInvalid,
          note: `or equivalent within +-${settings.equivalencePct}%: ${equivalent ? 'yes' : 'no'}`,
        }),
        equivalent && !timingInvalid,
      ),
      figure({
        name: 'wrong_secret_median_difference',
        figure: 'timing: the same, 95% bootstrap CI of the median difference, its worst bound as % of the baseline median',
        unit: '%',
        value: worstPct,
        note: `CI [${fmt(ci.low * 1000, 1)}, ${fmt(ci.high * 1000, 1)}] µs`,
      }),
      ...CLASSES.filter((c) => c.id !== 'unknown_prefix').map((c) =>
        figure({ name: `${c.id}_median`, figure: `timing: ${c.label}, median latency`, unit: 'ms', value: median(of(c.id)), baseline: baseline('unknown prefix', baseMedian) }),
      ),
      figure({
        name: 'valid_throughput_under_flood',
        figure: `valid traffic (${settings.validConnections} connections) while ${settings.floodConnections} connections send bad keys`,
        unit: 'req/s',
        value: rps(flooded),
        baseline: baseline('valid traffic alone', rps(alone)),
        target: { on: 'ratio', op: '>=', limit: FLOOD_TARGET },
        invalid: floodInvalid,
        roundRatios: flooded.map((r, i) => r.ok / (alone[i]?.ok ?? Number.NaN)),
      }),
      figure({ name: 'valid_p99_under_flood', figure: 'valid traffic latency p99 under the flood', unit: 'ms', value: percentile(latencies(flooded), 99), baseline: baseline('alone', percentile(latencies(alone), 99)) }),
      figure({ name: 'bad_key_rate', figure: 'bad keys answered (401, or 429 past the queue) during the flood', unit: 'req/s', value: rps(floods) }),
    ],
    charts: [
      {
        id: 'timing',
        title: 'GET /v1/me latency by key class (one request at a time, interleaved)',
        unit: 'ms',
        series: CLASSES.map((c) => ({ label: c.label, role: c.id === 'unknown_prefix' ? 'baseline' : 'measured', samples: compactSamples(of(c.id)) })),
      },
      {
        id: 'flood',
        title: 'Valid GET /v1/me latency, alone and under a flood of bad keys',
        unit: 'ms',
        series: [
          { label: 'valid traffic under the flood', role: 'measured', samples: compactSamples(latencies(flooded)) },
          { label: 'valid traffic alone', role: 'baseline', samples: compactSamples(latencies(alone)) },
        ],
      },
    ],
    notes: [
      'Timing: a fresh random key per request, the four classes shuffled together on one keep-alive connection, so drift and load hit every class alike.',
      `The timing figure passes when the Mann-Whitney test finds no difference at the ${ALPHA} level, or when the whole 95% bootstrap interval of the median difference is inside +-${settings.equivalencePct}% of the baseline median; a timing side channel (say, a lookup skipped for unknown prefixes, as malformed keys skip it) fails both.`,
      `Flood: ${settings.rounds} round(s) of ${settings.durationS} s, valid traffic alone then alongside the flood; medians of the rounds. The load generators run in this process, the API in a child, on the same machine.`,
      `Rate limit: ${database.rateLimitNote}.`,
    ],
    details: {
      timing: Object.fromEntries(CLASSES.map((c) => [c.id, { n: of(c.id).length, median: median(of(c.id)), p90: percentile(of(c.id), 90), p99: percentile(of(c.id), 99) }])),
      median_difference_ci_ms: ci,
      mann_whitney_p: p,
      flood: { alone_rps: alone.map((r) => r.ok / settings.durationS), flooded_rps: flooded.map((r) => r.ok / settings.durationS), bad_rps: floods.map((r) => r.ok / settings.durationS) },
    },
  };
  finish(result);
}

runBench('keys', () => withBenchService('keys', {}, main));
