/**
 * What every benchmark shares: settings from the environment, order statistics, the plain-text
 * tables, the machine's load, and the one result shape (BenchResult: figures with their same-run
 * baseline, ratio, target and verdict, plus latency distributions for the charts) that each bench
 * writes to bench/results/<name>.json and bench/all.ts turns into docs/benchmarks.md.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { conditionsBetween, conditionsText, cpuCounters, cpuModel, type Conditions, type CpuCounters } from './machine.js';
import type { Chart } from './svg.js';
import { machineLoad } from './upload-io.js';

export const RESULTS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'results');
export const MIB = 1024 * 1024;

export function envInt(name: string, fallback: number, min = 0): number {
  const raw = process.env[name];
  if (!raw) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be a whole number >= ${min}, got "${raw}"`);
  return n;
}

export function envNum(name: string, fallback: number, min = 0): number {
  const raw = process.env[name];
  if (!raw) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min) throw new Error(`${name} must be a number >= ${min}, got "${raw}"`);
  return n;
}

/** Nearest-rank percentile (p in 0..100) of the values; NaN for none. */
export function percentile(xs: number[], p: number): number {
  if (!xs.length) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? Number.NaN;
}

export function median(xs: number[]): number {
  if (!xs.length) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] ?? 0) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
}

/** A number with `digits` decimals, or '-' when it is not a number. */
export function fmt(x: number | null | undefined, digits = 1): string {
  return x === null || x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(digits);
}

/** A figure at a precision that suits its size: 12345, 123, 12.3, 1.23, 0.123. */
export function fmtAuto(x: number | null | undefined): string {
  if (x === null || x === undefined || !Number.isFinite(x)) return '-';
  const a = Math.abs(x);
  return x.toFixed(a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3);
}

/** A ratio: three decimals near 1, fewer when it is far off (41.9, 784). */
export function fmtRatio(r: number | null): string {
  if (r === null || !Number.isFinite(r)) return '-';
  const a = Math.abs(r);
  return r.toFixed(a >= 100 ? 0 : a >= 10 ? 1 : 3);
}

export function pct(ratio: number): string {
  return Number.isFinite(ratio) ? `${ratio >= 0 ? '+' : ''}${(ratio * 100).toFixed(1)}%` : '-';
}

export const passFail = (pass: boolean) => (pass ? 'PASS' : 'FAIL');

/** Rows under a header; every column as wide as its widest cell. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ').trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

export interface LoadNote {
  loadavg: number[];
  cpuPressure10s: number | null;
  text: string;
  /** Steal and CPU-pressure counters (absent in results written before issue 37). */
  counters?: CpuCounters | null;
}

/**
 * Load averages (as `uptime` prints them) and CPU pressure: other work on the machine skews wall
 * times. Every bench takes one before and one after its measurement (BenchResult.load); the
 * counters between the two give the conditions its section reports (machineConditions).
 */
export function loadNote(): LoadNote {
  const loadavg = os.loadavg().map((x) => Number(x.toFixed(2)));
  const { cpuPressure10s } = machineLoad();
  const text =
    `load average ${loadavg.join(', ')} on ${os.availableParallelism()} CPUs` +
    (cpuPressure10s === null ? '' : `, CPU pressure (some, 10 s) ${cpuPressure10s.toFixed(1)}%`);
  return { loadavg, cpuPressure10s, text, counters: cpuCounters() };
}

/** Steal time and CPU pressure between a result's two load notes (null for older results). */
export function machineConditions(load: { before: LoadNote; after: LoadNote }): Conditions | null {
  return conditionsBetween(load.before.counters, load.after.counters);
}

export const machineConditionsText = (load: { before: LoadNote; after: LoadNote }) => conditionsText(machineConditions(load));

/** The machine a result was measured on; `cpu` names the CPU (each section of the report says it). */
export function machine(): { node: string; cpus: number; platform: string; memory_bytes: number; cpu: string } {
  return { node: process.version, cpus: os.availableParallelism(), platform: `${os.platform()}-${os.arch()}`, memory_bytes: os.totalmem(), cpu: cpuModel() };
}

export type Comparison = '<' | '<=' | '>' | '>=';

/** A target on the measured value itself or on value / baseline. */
export interface Target {
  on: 'value' | 'ratio';
  op: Comparison;
  limit: number;
}

/** One measured figure, with what it is compared against in the same run. */
export interface Figure {
  /** Stable id within the benchmark (snake_case). */
  name: string;
  /** What was measured, for people. */
  figure: string;
  /** Unit of value and baseline. */
  unit: string;
  value: number;
  baseline: { label: string; value: number } | null;
  /** value / baseline.value; null without a baseline. */
  ratio: number | null;
  target: Target | null;
  /** null: no target, or the target does not apply this time (see note). */
  pass: boolean | null;
  note?: string;
  /** How the ratio (or, without a baseline, the value) varied over the bench's rounds. */
  spread?: Spread;
}

/** Order statistics of one figure's per-round ratios or values (issue 37: a ratio says how much it moved). */
export interface Spread {
  of: 'ratio' | 'value';
  n: number;
  min: number;
  q1: number;
  median: number;
  q3: number;
  max: number;
  /** What the samples are, when not rounds ("clips"). */
  over?: string;
}

export function spreadOf(of: Spread['of'], xs: number[], over?: string): Spread | undefined {
  const v = xs.filter(Number.isFinite);
  if (v.length < 2) return undefined;
  return { of, n: v.length, min: Math.min(...v), q1: percentile(v, 25), median: median(v), q3: percentile(v, 75), max: Math.max(...v), ...(over ? { over } : {}) };
}

/** "0.55-0.61 over 5 rounds": the range, and the middle half once there are enough rounds for one. */
export function spreadText(sp: Spread | undefined): string {
  if (!sp) return '';
  const f = sp.of === 'ratio' ? fmtRatio : fmtAuto;
  const iqr = sp.n >= 5 ? `, middle half ${f(sp.q1)}-${f(sp.q3)}` : '';
  return `${f(sp.min)}-${f(sp.max)} over ${sp.n} ${sp.over ?? 'rounds'}${iqr}`;
}

export interface BenchResult {
  benchmark: string;
  title: string;
  at: string;
  machine: ReturnType<typeof machine>;
  load: { before: LoadNote; after: LoadNote };
  database: { server: string; version: string | null };
  settings: Record<string, unknown>;
  figures: Figure[];
  charts: Chart[];
  /** Lines of context for the report (what the baseline is, how the figures were taken). */
  notes: string[];
  /** The benchmark's own detailed numbers, kept for diagnosis. */
  details: unknown;
}

/** The fields every result opens with, in the order the results files have always had them. */
export type ResultHeader = Pick<BenchResult, 'benchmark' | 'title' | 'at' | 'machine' | 'load' | 'database' | 'settings'>;

/**
 * A result's header, stamped now on this machine. Only the database's server and version are
 * copied: a bench database also carries its URL, key and clean-up, none of which belongs in a
 * results file.
 */
export function resultHeader(
  benchmark: string,
  title: string,
  load: BenchResult['load'],
  database: BenchResult['database'],
  settings: BenchResult['settings'],
): ResultHeader {
  return { benchmark, title, at: new Date().toISOString(), machine: machine(), load, database: { server: database.server, version: database.version }, settings };
}

export function meets(x: number, op: Comparison, limit: number): boolean {
  if (!Number.isFinite(x)) return false;
  return op === '<' ? x < limit : op === '<=' ? x <= limit : op === '>' ? x > limit : x >= limit;
}

/**
 * Builds a figure: ratio = value / baseline, pass from the target. `invalid` (a reason) fails it
 * whatever the numbers, e.g. when requests failed under load; `notApplicable` (a reason) leaves
 * it without a verdict, e.g. a job too short for the target to apply.
 */
export function figure(f: {
  name: string;
  figure: string;
  unit: string;
  value: number;
  baseline?: { label: string; value: number } | null;
  target?: Target | null;
  invalid?: string | null;
  notApplicable?: string | null;
  note?: string;
  /** Each round's ratio (value / baseline of that round): reported as the figure's spread. */
  roundRatios?: number[];
  /** Each round's value, for a figure without a baseline (with one, roundRatios says more). */
  roundValues?: number[];
  /** What roundRatios / roundValues are samples of, when not rounds ("clips"). */
  spreadOver?: string;
}): Figure {
  const baseline = f.baseline ?? null;
  const ratio = baseline && baseline.value !== 0 && Number.isFinite(baseline.value) ? f.value / baseline.value : null;
  const target = f.target ?? null;
  let pass: boolean | null = null;
  if (target && !f.notApplicable) pass = !f.invalid && meets(target.on === 'ratio' ? (ratio ?? Number.NaN) : f.value, target.op, target.limit);
  const note = [f.invalid, f.notApplicable, f.note].filter(Boolean).join('; ');
  const spread = f.roundRatios ? spreadOf('ratio', f.roundRatios, f.spreadOver) : f.roundValues ? spreadOf('value', f.roundValues, f.spreadOver) : undefined;
  return { name: f.name, figure: f.figure, unit: f.unit, value: f.value, baseline, ratio, target, pass, ...(note ? { note } : {}), ...(spread ? { spread } : {}) };
}

/** "ratio >= 0.50", "< 20 ms": how the report and the console print a target. */
export function targetText(t: Target | null, unit: string): string {
  if (!t) return '-';
  const op = t.op.replace('<=', '≤').replace('>=', '≥');
  const limit = String(Number(t.limit.toPrecision(6)));
  return t.on === 'ratio' ? `ratio ${op} ${limit}` : `${op} ${limit} ${unit}`;
}

export const verdict = (f: Figure) => (f.pass === null ? (f.target ? 'n/a' : '-') : passFail(f.pass));

/** The figures as the same table the report shows, for the console. */
export function figuresTable(figures: Figure[]): string {
  return table(
    ['figure', 'value', 'baseline (same run)', 'ratio', 'target', 'result'],
    figures.map((f) => [
      f.figure,
      `${fmtAuto(f.value)} ${f.unit}${f.spread?.of === 'value' ? ` (${spreadText(f.spread)})` : ''}`,
      f.baseline ? `${f.baseline.label}: ${fmtAuto(f.baseline.value)}` : '-',
      `${fmtRatio(f.ratio)}${f.spread?.of === 'ratio' ? ` (${spreadText(f.spread)})` : ''}`,
      targetText(f.target, f.unit),
      verdict(f) + (f.note ? ` (${f.note})` : ''),
    ]),
  );
}

/** At most `max` samples, evenly spaced in rank: the shape of the distribution, a bounded file. */
export function compactSamples(xs: number[], max = 2000): number[] {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length <= max) return s;
  return Array.from({ length: max }, (_, i) => s[Math.round((i * (s.length - 1)) / (max - 1))] ?? 0);
}

/** Whether every figure with a verdict passed (figures without one do not count). */
export const allPass = (figures: Figure[]) => figures.every((f) => f.pass !== false);

/** Writes bench/results/<benchmark>.json; returns its path relative to the working directory. */
export function writeResults(result: BenchResult): string {
  const file = path.join(RESULTS_DIR, `${result.benchmark}.json`);
  fs.mkdirSync(RESULTS_DIR, { recursive: true });
  fs.writeFileSync(file, JSON.stringify(result, null, 2) + '\n');
  return path.relative(process.cwd(), file);
}

/** Prints the figures table, writes the results file, and sets a failing exit code on any FAIL. */
export function finish(result: BenchResult): void {
  process.stdout.write(`\n${result.title}\n${figuresTable(result.figures)}\nmachine ${machineConditionsText(result.load)}\n`);
  process.stdout.write(`results written to ${writeResults(result)}\n`);
  if (!allPass(result.figures)) process.exitCode = 1;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export function errorText(err: unknown): string {
  return err instanceof Error ? (err.stack ?? err.message) : String(err);
}

const said = new WeakSet<object>();

/**
 * Writes a benchmark's failure to stderr, once per error: a main() says it in its catch, before
 * its clean-up (which may fail in its own way and hide it), and the top level says it again only
 * if nothing did.
 */
export function sayFailure(name: string, err: unknown): void {
  if (typeof err === 'object' && err !== null) {
    if (said.has(err)) return;
    said.add(err);
  }
  process.stderr.write(`bench:${name} failed: ${errorText(err)}\n`);
}

/** Runs a benchmark's main(): a failure is said (once) and exits 1. */
export function runBench(name: string, main: () => Promise<void>): void {
  main().catch((err: unknown) => {
    sayFailure(name, err);
    process.exit(1);
  });
}

/** Stops a benchmark (cleaning up first) that is still running after BENCH_MAX_MINUTES (10). */
export function watchdog(name: string, cleanup: () => Promise<void>, defaultMinutes = 10): void {
  const minutes = envNum('BENCH_MAX_MINUTES', defaultMinutes, 0.1);
  setTimeout(() => {
    process.stderr.write(`bench:${name}: still running after ${minutes} min, stopping\n`);
    void cleanup().finally(() => process.exit(1));
  }, minutes * 60_000).unref();
}
