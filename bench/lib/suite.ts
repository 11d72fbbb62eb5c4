/**
 * The benchmarks `npm run bench` runs, in order: each a script under bench/ writing
 * bench/results/<name>.json in the BenchResult shape, with the environment that makes it short
 * for `--quick`. A new benchmark is one more entry here.
 */
import fs from 'node:fs';
import path from 'node:path';
import { cephInstalled } from '../../scripts/ceph-gateway.js';
import type { CpuCounters } from './machine.js';
import type { BenchResult, Figure, Spread, Target } from './report.js';
import type { Chart, ChartSeries } from './svg.js';

export interface BenchEntry {
  name: string;
  title: string;
  /** Relative to the repository root. */
  script: string;
  /** Defaults for --quick; variables already set in the environment win. */
  quickEnv: Record<string, string>;
  /** Why it cannot run on this machine (reported as not run), or null when it can. */
  unavailable?: () => string | null;
}

export const BENCHES: BenchEntry[] = [
  {
    name: 'http',
    title: 'authenticated request vs bare Fastify, idle memory',
    script: 'bench/http.ts',
    quickEnv: { BENCH_DURATION: '3', BENCH_WARMUP: '1', BENCH_ROUNDS: '1' },
  },
  {
    name: 'upload',
    title: 'multipart upload to local storage vs a plain file write',
    script: 'bench/upload.ts',
    quickEnv: { BENCH_FILE_MIB: '128', BENCH_ROUNDS: '1', BENCH_WARMUP: '0', BENCH_SETTLE_MS: '1000' },
  },
  {
    name: 'upload-s3',
    title: 'multipart upload to a real S3 (Ceph RADOS Gateway, or TEST_S3_ENDPOINT) vs a plain AWS SDK multipart upload',
    script: 'bench/upload-s3.ts',
    // A memstore OSD keeps every object in memory: the file stays small.
    quickEnv: { BENCH_S3_FILE_MIB: '64', BENCH_ROUNDS: '1' },
    unavailable: () =>
      process.env.TEST_S3_ENDPOINT || cephInstalled()
        ? null
        : "no S3 to measure: set TEST_S3_ENDPOINT (and its keys), or install Debian's ceph-mon, ceph-osd, radosgw and ceph-common for a gateway",
  },
  {
    name: 'runs',
    title: 'run queue latency and throughput, engine overhead on a real job',
    script: 'bench/runs.ts',
    quickEnv: { BENCH_PACED_RUNS: '50', BENCH_BURST_RUNS: '60', BENCH_REAL_ROUNDS: '1', BENCH_FAIR_BACKLOG: '300' },
  },
  {
    name: 'tools',
    title: 'the five tools through the API vs their runners called directly',
    script: 'bench/tools.ts',
    quickEnv: { BENCH_ROUNDS: '1', BENCH_WORK_PRICES: 'quick' },
  },
  {
    name: 'quality',
    title: 'image_upscale against a textbook centred Lanczos3 on natural photographs',
    script: 'bench/quality.ts',
    quickEnv: {},
  },
  {
    name: 'quality-learned',
    title: 'image_upscale learned vs Lanczos3 at 2x and 4x on BSD100, Set14 and Set5 (issues 28, 38)',
    script: 'bench/quality-learned.ts',
    quickEnv: { BENCH_SETS: 'Set14' },
  },
  {
    name: 'video-learned',
    title: 'video_upscale learned vs lanczos: CPU and realtime factor at 540p -> 1080p, luma PSNR and flicker on panned and still photos (issues 28, 38)',
    script: 'bench/video-learned.ts',
    quickEnv: { BENCH_ROUNDS: '1', BENCH_SPEED_SECONDS: '2', BENCH_QUALITY_FRAMES: '12' },
  },
  {
    name: 'upscale-speed',
    title: 'image_upscale learned (int8) vs lanczos through the API: seconds per input MP at 1 and 12 MP, peak worker RSS at 16 MP (issues 28, 38)',
    script: 'bench/upscale-speed.ts',
    // The bench itself shrinks the sizes under BENCH_QUICK (0.3 and 2 MP, a 1400 px square).
    quickEnv: { BENCH_ROUNDS: '2' },
  },
  {
    name: 'webhooks',
    title: 'webhook delivery latency and rate vs plain signed POSTs',
    script: 'bench/webhooks.ts',
    quickEnv: { BENCH_WEBHOOK_RUNS: '150' },
  },
  {
    name: 'keys',
    title: 'API key timing and a flood of bad keys',
    script: 'bench/keys.ts',
    quickEnv: { BENCH_ROUNDS: '1', BENCH_DURATION: '4' },
  },
  {
    name: 'brandkit',
    title: 'brand_kit_extract on 13 real web sites (issue 27)',
    script: 'bench/brandkit.ts',
    quickEnv: {},
  },
  {
    name: 'render-isolation',
    title: 'brand_kit_extract render mode: the service process and the render tree, per page (issue 34)',
    script: 'bench/render-isolation.ts',
    quickEnv: {},
    unavailable: () => (fs.existsSync(process.env.BENCH_BROWSER_PATH || '/usr/bin/chromium') ? null : 'needs Chromium (BENCH_BROWSER_PATH, default /usr/bin/chromium)'),
  },
  {
    name: 'password',
    title: 'password check: zxcvbn-ts vs scrypt (issue 34)',
    script: 'bench/password.ts',
    quickEnv: { BENCH_ROUNDS: '3' },
  },
  {
    name: 'scale',
    title: 'every /v1 read and console page on a team with a long past (N runs) vs a young database (issue 37)',
    script: 'bench/scale.ts',
    quickEnv: { BENCH_SCALE_RUNS: '20000', BENCH_SCALE_ROUNDS: '10', BENCH_SCALE_CLAIMS: '10' },
  },
  {
    name: 'retention',
    title: 'a simulated week of deletes and inserts: table sizes and janitor batches (issue 37)',
    script: 'bench/retention.ts',
    quickEnv: { BENCH_RETENTION_RUNS_PER_DAY: '480', BENCH_RETENTION_DAYS: '2' },
  },
  {
    name: 'containers',
    title: 'image sizes and start-to-healthy times of the container stack (issue 36)',
    script: 'bench/containers.ts',
    quickEnv: {},
    unavailable: () =>
      process.getuid?.() !== 0 || !fs.existsSync('/usr/bin/podman') || !fs.existsSync('/usr/bin/podman-compose') || !cephInstalled()
        ? 'needs root, podman, podman-compose and Ceph (as CI\'s container stage: npm run test:deploy)'
        : null,
  },
];

/** Environment for one benchmark's process: ours, plus its quick defaults and BENCH_QUICK=1. */
export function benchEnv(entry: BenchEntry, quick: boolean, env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  if (!quick) return { ...env };
  const out: NodeJS.ProcessEnv = { ...env, BENCH_QUICK: '1' };
  for (const [k, v] of Object.entries(entry.quickEnv)) if (!out[k]) out[k] = v;
  return out;
}

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
/** JSON writes NaN as null: read it back as NaN. */
const num = (x: unknown) => (typeof x === 'number' ? x : Number.NaN);
const str = (x: unknown, fallback = '') => (typeof x === 'string' ? x : fallback);

function readSpread(x: unknown): { spread: Spread } | null {
  if (!isObject(x) || (x.of !== 'ratio' && x.of !== 'value')) return null;
  const over = typeof x.over === 'string' ? { over: x.over } : {};
  return { spread: { of: x.of, n: num(x.n), min: num(x.min), q1: num(x.q1), median: num(x.median), q3: num(x.q3), max: num(x.max), ...over } };
}

/** A load note's counters, or null (results written before issue 37 have none). */
function readCounters(x: unknown): CpuCounters | null {
  if (!isObject(x) || typeof x.at !== 'number' || typeof x.stealTicks !== 'number' || typeof x.totalTicks !== 'number') return null;
  return { at: x.at, stealTicks: x.stealTicks, totalTicks: x.totalTicks, pressureSomeUs: typeof x.pressureSomeUs === 'number' ? x.pressureSomeUs : null };
}

function readFigure(x: unknown): Figure | null {
  if (!isObject(x) || typeof x.figure !== 'string' || typeof x.unit !== 'string') return null;
  const b = isObject(x.baseline) ? { label: str(x.baseline.label), value: num(x.baseline.value) } : null;
  const on = isObject(x.target) ? x.target.on : null;
  const op = isObject(x.target) ? x.target.op : null;
  const t: Target | null =
    isObject(x.target) && (on === 'value' || on === 'ratio') && (op === '<' || op === '<=' || op === '>' || op === '>=')
      ? { on, op, limit: num(x.target.limit) }
      : null;
  return {
    name: str(x.name, x.figure),
    figure: x.figure,
    unit: x.unit,
    value: num(x.value),
    baseline: b,
    ratio: typeof x.ratio === 'number' ? x.ratio : null,
    target: t,
    pass: typeof x.pass === 'boolean' ? x.pass : null,
    ...(typeof x.note === 'string' && x.note ? { note: x.note } : {}),
    ...(readSpread(x.spread) ?? {}),
  };
}

function readSeries(x: unknown): ChartSeries | null {
  if (!isObject(x) || typeof x.label !== 'string') return null;
  const s: ChartSeries = { label: x.label, role: x.role === 'baseline' ? 'baseline' : 'measured' };
  if (Array.isArray(x.samples)) s.samples = x.samples.map(num);
  if (Array.isArray(x.percentiles)) s.percentiles = x.percentiles.filter(isObject).map((q) => ({ p: num(q.p), value: num(q.value) }));
  return s;
}

function readChart(x: unknown): Chart | null {
  if (!isObject(x) || typeof x.id !== 'string' || typeof x.title !== 'string' || !Array.isArray(x.series)) return null;
  return { id: x.id, title: x.title, unit: str(x.unit), series: x.series.map(readSeries).filter((s): s is ChartSeries => s !== null) };
}

/**
 * A results file in the BenchResult shape, or the reason it is not one. Unknown extra fields are
 * kept in `details`; figures and charts that do not parse are dropped, a file with no figure at
 * all is refused.
 */
export function readResult(file: string): { result: BenchResult } | { error: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    return { error: `${path.basename(file)} is not readable JSON: ${err instanceof Error ? err.message : String(err)}` };
  }
  if (!isObject(raw) || !Array.isArray(raw.figures)) return { error: `${path.basename(file)} has no "figures" array (not the BenchResult shape of bench/lib/report.ts)` };
  const figures = raw.figures.map(readFigure).filter((f): f is Figure => f !== null);
  if (!figures.length) return { error: `${path.basename(file)} has no readable figure` };
  const load = isObject(raw.load) ? raw.load : {};
  const loadOf = (x: unknown) => {
    const o = isObject(x) ? x : {};
    return { loadavg: Array.isArray(o.loadavg) ? o.loadavg.map(num) : [], cpuPressure10s: typeof o.cpuPressure10s === 'number' ? o.cpuPressure10s : null, text: str(o.text, 'unknown'), counters: readCounters(o.counters) };
  };
  const db = isObject(raw.database) ? raw.database : {};
  const m = isObject(raw.machine) ? raw.machine : {};
  return {
    result: {
      benchmark: str(raw.benchmark, path.basename(file, '.json')),
      title: str(raw.title),
      at: str(raw.at),
      machine: { node: str(m.node), cpus: num(m.cpus), platform: str(m.platform), memory_bytes: num(m.memory_bytes), cpu: str(m.cpu, 'unknown CPU (not recorded)') },
      load: { before: loadOf(load.before), after: loadOf(load.after) },
      database: { server: str(db.server, 'unknown'), version: typeof db.version === 'string' ? db.version : null },
      settings: isObject(raw.settings) ? raw.settings : {},
      figures,
      charts: Array.isArray(raw.charts) ? raw.charts.map(readChart).filter((c): c is Chart => c !== null) : [],
      notes: Array.isArray(raw.notes) ? raw.notes.filter((n): n is string => typeof n === 'string') : [],
      details: raw.details ?? null,
    },
  };
}
