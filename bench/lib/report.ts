/**
 * Shared by bench/runs.ts, bench/tools.ts and bench/webhooks.ts: settings from the environment,
 * order statistics, a plain-text table (the layout bench/http.ts prints: first column left, the
 * rest right-aligned), the machine's load, and the JSON results file.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
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

/** Load averages (as `uptime` prints them) and CPU pressure: other work on the machine skews wall times. */
export function loadNote(): { loadavg: number[]; cpuPressure10s: number | null; text: string } {
  const loadavg = os.loadavg().map((x) => Number(x.toFixed(2)));
  const { cpuPressure10s } = machineLoad();
  const text =
    `load average ${loadavg.join(', ')} on ${os.availableParallelism()} CPUs` +
    (cpuPressure10s === null ? '' : `, CPU pressure (some, 10 s) ${cpuPressure10s.toFixed(1)}%`);
  return { loadavg, cpuPressure10s, text };
}

export function machine(): { node: string; cpus: number; platform: string } {
  return { node: process.version, cpus: os.availableParallelism(), platform: `${os.platform()}-${os.arch()}` };
}

/** Writes bench/results/<name>.json; returns its path relative to the working directory. */
export function writeResults(name: string, report: unknown): string {
  const file = path.join(RESULTS_DIR, `${name}.json`);
  fs.mkdirSync(RESULTS_DIR, { recursive: true });
  fs.writeFileSync(file, JSON.stringify(report, null, 2) + '\n');
  return path.relative(process.cwd(), file);
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export function errorText(err: unknown): string {
  return err instanceof Error ? (err.stack ?? err.message) : String(err);
}

/** Stops a benchmark (cleaning up first) that is still running after BENCH_MAX_MINUTES (10). */
export function watchdog(name: string, cleanup: () => Promise<void>): void {
  const minutes = envNum('BENCH_MAX_MINUTES', 10, 0.1);
  setTimeout(() => {
    process.stderr.write(`bench:${name}: still running after ${minutes} min, stopping\n`);
    void cleanup().finally(() => process.exit(1));
  }, minutes * 60_000).unref();
}
