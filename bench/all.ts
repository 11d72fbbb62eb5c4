/**
 * `npm run bench -- [--quick] [--only http,runs]`: every benchmark of bench/lib/suite.ts, each
 * in its own process, one after another (a crash or a hang stops that one only), then
 * docs/benchmarks.md and its charts in docs/benchmarks/ from their results. Not a test.
 *
 * A benchmark "ran" when it wrote bench/results/<name>.json (deleted before it starts) in the
 * BenchResult shape; its exit code may still be 1 because a figure missed its target, which the
 * report shows. A missing script, a crash or a hang is reported as such.
 *
 * Environment: BENCH_TIMEOUT_MINUTES (per benchmark; 30, or 12 with --quick); everything else is
 * passed to the benchmarks (DATABASE_URL, BENCH_*; with --quick their quick defaults are added
 * unless already set, and BENCH_QUICK=1). Exit code: 0 when every benchmark ran and every figure
 * with a target passed, 1 otherwise, 64 for a usage error, 130 when interrupted.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { machineInfo } from './lib/machine.js';
import { writeReport, type BenchOutcome, type ReportInput } from './lib/markdown.js';
import { allPass, envNum, errorText, loadNote, RESULTS_DIR } from './lib/report.js';
import { benchEnv, BENCHES, readResult, type BenchEntry } from './lib/suite.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const REPORT = path.join(ROOT, 'docs', 'benchmarks.md');
const TAIL_BYTES = 6000;
const KILL_GRACE_MS = 30_000;

const minutes = (ms: number) => (ms >= 60_000 ? `${Math.round(ms / 60_000)} min` : `${Math.round(ms / 1000)} s`);

const USAGE = `usage: npm run bench -- [--quick] [--only ${BENCHES.map((b) => b.name).join(',')}]`;

interface Options {
  quick: boolean;
  only: string[] | null;
}

function parseOptions(argv: string[]): Options {
  const { values } = parseArgs({ args: argv, options: { quick: { type: 'boolean' }, only: { type: 'string' }, help: { type: 'boolean' } }, strict: true });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  const only = values.only ? values.only.split(',').map((s) => s.trim()).filter(Boolean) : null;
  const unknown = (only ?? []).filter((n) => !BENCHES.some((b) => b.name === n));
  if (unknown.length) throw new UsageError(`--only: unknown benchmark ${unknown.join(', ')}`);
  return { quick: values.quick ?? false, only };
}

class UsageError extends Error {}

/** Signals a process group we started; it may already be gone. */
function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // the group has no process left
  }
}

interface Running {
  pid: number;
  interrupt(): void;
}

/**
 * Runs one benchmark in its own process group (so that whatever it leaves behind can be stopped
 * by group), streaming its output and keeping the end of it for the report.
 */
function runChild(entry: BenchEntry, env: NodeJS.ProcessEnv, timeoutMs: number, onStart: (r: Running) => void): Promise<{ code: number | null; tail: string; timedOut: boolean }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', entry.script], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let tail = '';
    const keep = (chunk: Buffer, to: NodeJS.WriteStream) => {
      to.write(chunk);
      tail = (tail + chunk.toString('utf8')).slice(-TAIL_BYTES);
    };
    child.stdout.on('data', (c: Buffer) => keep(c, process.stdout));
    child.stderr.on('data', (c: Buffer) => keep(c, process.stderr));
    let timedOut = false;
    let killTimer: NodeJS.Timeout | null = null;
    // SIGINT first: every benchmark cleans up (servers, databases, temp dirs) on it.
    const interrupt = () => {
      if (child.pid) process.kill(child.pid, 'SIGINT');
      killTimer ??= setTimeout(() => child.pid && signalGroup(child.pid, 'SIGKILL'), KILL_GRACE_MS);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      process.stderr.write(`\nbench: ${entry.name} still running after ${minutes(timeoutMs)}, stopping it\n`);
      interrupt();
    }, timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      resolve({ code: null, tail: errorText(err), timedOut });
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (killTimer) clearTimeout(killTimer);
      if (child.pid) signalGroup(child.pid, 'SIGTERM');
      resolve({ code: code ?? (signal ? 128 : null), tail, timedOut });
    });
    if (child.pid) onStart({ pid: child.pid, interrupt });
  });
}

async function runOne(entry: BenchEntry, opts: Options, timeoutMs: number, onStart: (r: Running) => void): Promise<BenchOutcome> {
  const base = { name: entry.name, title: entry.title, script: entry.script, result: null, exitCode: null, seconds: null, reason: null };
  if (opts.only && !opts.only.includes(entry.name)) return { ...base, status: 'skipped', reason: `not selected (--only ${opts.only.join(',')})` };
  if (!fs.existsSync(path.join(ROOT, entry.script))) return { ...base, status: 'missing', reason: `\`${entry.script}\` does not exist in this checkout` };
  const unavailable = entry.unavailable?.() ?? null;
  if (unavailable) return { ...base, status: 'missing', reason: unavailable };
  const resultsFile = path.join(RESULTS_DIR, `${entry.name}.json`);
  fs.rmSync(resultsFile, { force: true });
  process.stdout.write(`\n=== bench ${entry.name} (${entry.script}) ===\n`);
  const t0 = performance.now();
  const run = await runChild(entry, benchEnv(entry, opts.quick), timeoutMs, onStart);
  const seconds = (performance.now() - t0) / 1000;
  const outcome = { ...base, exitCode: run.code, seconds };
  if (!fs.existsSync(resultsFile)) {
    const why = run.timedOut ? `stopped after the ${minutes(timeoutMs)} limit (BENCH_TIMEOUT_MINUTES)` : 'no results file';
    return { ...outcome, status: 'failed', reason: `${why}; end of its output:\n${run.tail}` };
  }
  const read = readResult(resultsFile);
  if ('error' in read) return { ...outcome, status: 'failed', reason: read.error };
  return { ...outcome, status: 'ok', result: read.result };
}

async function main(): Promise<void> {
  let opts: Options;
  try {
    opts = parseOptions(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n${USAGE}\n`);
    process.exit(64);
  }
  const timeoutMs = envNum('BENCH_TIMEOUT_MINUTES', opts.quick ? 12 : 30, 0.1) * 60_000;
  let current: Running | null = null;
  let interrupted = false;
  process.on('SIGINT', () => {
    interrupted = true;
    process.stderr.write('\nbench: interrupted, stopping the running benchmark\n');
    current?.interrupt();
  });

  const before = loadNote();
  const machine = await machineInfo();
  const benches: BenchOutcome[] = [];
  for (const entry of BENCHES) {
    if (interrupted) break;
    const outcome = await runOne(entry, opts, timeoutMs, (r) => (current = r));
    current = null;
    benches.push(outcome);
  }
  if (interrupted) {
    process.stderr.write('bench: interrupted; docs/benchmarks.md left as it was\n');
    process.exit(130);
  }
  const input: ReportInput = {
    generatedAt: new Date().toISOString(),
    command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
    quick: opts.quick,
    machine,
    load: { before, after: loadNote() },
    benches,
  };
  const written = writeReport(input, REPORT);
  process.stdout.write(`\nreport written to ${path.relative(process.cwd(), written.markdown)} with ${written.charts.length} charts\n`);
  for (const b of benches) {
    const figs = b.result?.figures ?? [];
    process.stdout.write(`  ${b.name.padEnd(9)} ${b.status.padEnd(8)} ${figs.filter((f) => f.pass === true).length} PASS, ${figs.filter((f) => f.pass === false).length} FAIL\n`);
  }
  const ran = benches.filter((b) => b.status !== 'skipped');
  const ok = ran.every((b) => b.status === 'ok' && allPass(b.result?.figures ?? []));
  process.exitCode = ok ? 0 : 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${errorText(err)}\n`);
  process.exit(1);
});
