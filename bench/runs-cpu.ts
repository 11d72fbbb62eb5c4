/**
 * `npm run bench:runs-cpu`: bench:runs' CPU-per-run part alone (bench/lib/run-cpu.ts), printed, no
 * report written: for looking at one change to the engine's path at a time. Not a test.
 * BENCH_CPU_JSON=<file> also writes the figures and the statements as JSON.
 */
import fs from 'node:fs';
import { cpuLines, measureCpu } from './lib/run-cpu-report.js';
import { loadNote, runBench } from './lib/report.js';
import { serviceEnv, withBenchService } from './lib/service.js';

runBench('runs-cpu', () =>
  withBenchService('runs-cpu', {}, async (svc) => {
    const before = loadNote();
    // No bench database: measureCpu sets up its own on a PostgreSQL server of its own.
    const env = serviceEnv(svc, null, { logLevel: process.env.BENCH_LOG_LEVEL || 'warn' });
    const result = await measureCpu(env, svc.logger);
    process.stdout.write([...cpuLines(result), `load: before ${before.text}; after ${loadNote().text}`, ''].join('\n'));
    if (process.env.BENCH_CPU_JSON) fs.writeFileSync(process.env.BENCH_CPU_JSON, JSON.stringify(result, null, 2));
  }),
);
