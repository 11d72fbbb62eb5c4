/**
 * `npm run bench:upload`: a 1 GiB file in 8 MiB parts, 4 parts in flight, through the local storage
 * backend, against the work such an upload cannot avoid: writing the same bytes to a file in the
 * same directory and taking each part's MD5, the ETag a part PUT answers with (issues 3 and 29,
 * "Benchmarks"). Not a test.
 *
 * The baseline (writeWithMd5 in bench/lib/upload-io.ts) writes the bytes in 1 MiB slices with
 * FileHandle.writev, whose write(2) runs on libuv's threadpool, while its main thread hashes each
 * slice into its part's MD5, with as many writes under way as the upload has parts in flight
 * (BENCH_BASELINE_WRITES): the service's parallelism, one write under way per part being received
 * on the threadpool and one MD5 worker thread. The service hashes nothing else (completion renames
 * the data file), so that is all of it. Its MD5s must equal the upload's ETags for the same round, or the bench fails.
 * A bare write (no MD5), the old baseline, is reported beside it for information, measured after
 * all rounds (once per round), so that every upload and every baseline follows the same history:
 * the other side's 1 GiB.
 *
 * The API runs as a child process (bench/server.ts via bench/lib/children.ts, i.e. the real
 * startService) so its RSS is read alone from /proc every 100 ms during each upload. Upload time
 * runs from the first part PUT to the complete response (the PUT phase and complete, which
 * renames the data file into place and probes the result, are also reported apart). An untimed
 * warm-up round comes first; rounds then alternate which side goes first; medians are reported.
 * The RSS target is checked against every upload, the warm-up one (a cold server) included.
 *
 * Before every timed phase the previous outputs are deleted, `sync` runs, and the bench waits
 * BENCH_SETTLE_MS: in a VM that hands freed memory back to the host (virtio-balloon free page
 * reporting, after ~2 s), writing into page cache runs at ~3 GB/s when it reuses just-freed pages
 * and ~0.3-0.5 GB/s when it must fault fresh ones in, so both sides start from the same state. Each
 * bare write is repeated at once over just-freed pages ("warm memory"), reported for information;
 * the target compares like with like (both after the pause).
 *
 * CPU seconds (server and client from /proc, the server's split into user and system time and
 * its event-loop thread against the rest) are reported too: unlike wall time on a shared machine,
 * they barely move with load.
 *
 * Environment: DATABASE_URL (else an embedded PostgreSQL in a temp dir), BENCH_ROUNDS (5),
 * BENCH_WARMUP (1), BENCH_FILE_MIB (1024), BENCH_PART_MIB (8), BENCH_IN_FLIGHT (4),
 * BENCH_BASELINE_WRITES (BENCH_IN_FLIGHT),
 * BENCH_SETTLE_MS (3000), BENCH_LOG_LEVEL (warn).
 *
 * BENCH_UPLOAD_STORAGE=s3 measures S3 instead (bench/lib/upload-s3.ts; results in upload-s3.json):
 * the upload through the service against a plain AWS SDK multipart upload to the same S3.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startApiChild } from './lib/children.js';
import { compactSamples, envInt, figure, finish, loadNote, median, MIB, type BenchResult, resultHeader, runBench } from './lib/report.js';
import { withBenchService, type BenchService } from './lib/service.js';
import { uploadOnce, type UploadRun } from './lib/upload-client.js';
import { s3UploadMain } from './lib/upload-s3.js';
import { normalizeEtag } from '../src/storage/storage.js';
import { diagnostics, machineLoad, plainWrite, syncDisks, SyntheticFile, type Timing, writeWithMd5 } from './lib/upload-io.js';

const RATIO_TARGET = 0.8;
const RSS_GROWTH_TARGET_MB = 100;

const settings = {
  rounds: envInt('BENCH_ROUNDS', 5, 1),
  warmup: envInt('BENCH_WARMUP', 1, 0),
  fileBytes: envInt('BENCH_FILE_MIB', 1024, 1) * MIB,
  partBytes: envInt('BENCH_PART_MIB', 8, 1) * MIB,
  inFlight: envInt('BENCH_IN_FLIGHT', 4, 1),
  /** Writes the baseline keeps under way: as many as the upload has parts in flight, by default. */
  baselineWrites: envInt('BENCH_BASELINE_WRITES', envInt('BENCH_IN_FLIGHT', 4, 1), 1),
  settleMs: envInt('BENCH_SETTLE_MS', 3000, 0),
  rssEveryMs: 100,
  apiLogLevel: process.env.BENCH_LOG_LEVEL || 'warn',
};

/** Decimal megabytes, as the targets are written; JSON carries bytes too. */
const mb = (bytes: number) => bytes / 1e6;
const mbps = (bytes: number, s: number) => (s > 0 ? mb(bytes) / s : 0);

async function main(svc: BenchService): Promise<void> {
  const dataDir = svc.dir;
  const storageRoot = path.join(dataDir, 'storage');
  const loadNoteBefore = loadNote();
  process.stdout.write(`setting up the database and the API server (${loadNoteBefore.text})...\n`);
  const database = await svc.database();
  const child = svc.child('api', await startApiChild(database.url, settings.apiLogLevel, {
    TOOLRUN_DATA_DIR: dataDir,
    TOOLRUN_STORAGE: 'local',
    TOOLRUN_PART_SIZE_BYTES: String(settings.partBytes),
  }));
  fs.mkdirSync(storageRoot, { recursive: true });
  const data = new SyntheticFile(settings.fileBytes, settings.partBytes);
  const plainFile = path.join(storageRoot, 'plain-baseline.bin');
  const clearOutputs = () => {
    fs.rmSync(plainFile, { force: true });
    fs.rmSync(path.join(storageRoot, 'objects'), { recursive: true, force: true });
  };
  process.stdout.write(
    `database: ${database.server}; storage: local under ${storageRoot}\n` +
      `${mb(settings.fileBytes).toFixed(0)} MB (${settings.fileBytes / MIB} MiB) in ${data.partCount} parts of ` +
      `${settings.partBytes / MIB} MiB, ${settings.inFlight} in flight; ${settings.rounds} round(s), alternating order\n`,
  );

  type BaselineRun = Timing & { round: number; partMs: number[] };
  type BareRun = { bare: Timing; warm: Timing };
  const baseRuns: BaselineRun[] = [];
  const uploadRuns: UploadRun[] = [];
  const warmupRuns: UploadRun[] = [];
  // Both sides hash the same bytes per round: the baseline's MD5s must be the upload's ETags.
  const md5sOf = new Map<number, { baseline?: string[]; upload?: string[] }>();
  const checkEtags = (round: number, side: 'baseline' | 'upload', md5s: string[]) => {
    const seen = { ...md5sOf.get(round), [side]: md5s.map(normalizeEtag) };
    md5sOf.set(round, seen);
    if (seen.baseline && seen.upload && seen.baseline.join() !== seen.upload.join()) {
      throw new Error(`round ${round}: the upload's part ETags are not the MD5s of the parts' bytes`);
    }
  };
  const settle = async () => {
    clearOutputs();
    syncDisks();
    await new Promise((resolve) => setTimeout(resolve, settings.settleMs));
  };
  const loadBefore = machineLoad();
  for (let round = 1 - settings.warmup; round <= settings.rounds; round++) {
    const order = round % 2 === 1 ? ['baseline', 'upload'] : ['upload', 'baseline'];
    const label = round < 1 ? 'warm-up' : `round ${round}`;
    for (const side of order) {
      await settle();
      if (side === 'baseline') {
        const { md5s, ...t } = await writeWithMd5(plainFile, data, round, settings.baselineWrites);
        checkEtags(round, 'baseline', md5s);
        if (round >= 1) baseRuns.push({ round, ...t });
        process.stdout.write(
          `  ${label.padEnd(8)} write + MD5 ${mbps(data.totalBytes, t.seconds).toFixed(0).padStart(6)} MB/s  ${t.seconds.toFixed(2)} s, CPU ${t.cpuS.toFixed(2)} s\n`,
        );
      } else {
        const run = await uploadOnce(child, database.key, data, round, settings);
        checkEtags(round, 'upload', run.etags);
        (round >= 1 ? uploadRuns : warmupRuns).push(run);
        process.stdout.write(
          `  ${label.padEnd(8)} upload      ${mbps(data.totalBytes, run.totalS).toFixed(0).padStart(6)} MB/s  ${run.totalS.toFixed(2)} s,` +
            ` CPU ${(run.serverCpuPutS + run.serverCpuCompleteS).toFixed(2)} s srv` +
            ` (PUTs ${run.putS.toFixed(2)} s, complete ${run.completeS.toFixed(2)} s, status ${run.status}),` +
            ` RSS +${mb(run.rssGrowthBytes).toFixed(1)} MB\n`,
        );
      }
    }
  }

  // The bare write, for information, once per round after all rounds: after the same pause, then
  // at once again (warm memory). Inside the rounds they put 2 GiB more through the page cache
  // right before every upload and never before a baseline (the sides alternate); here both sides
  // follow the same history (docs/decisions.md, "The upload ratio, bisected").
  const bareRuns: BareRun[] = [];
  for (let round = 1; round <= settings.rounds; round++) {
    await settle();
    const { partMs: _bareParts, ...bare } = await plainWrite(plainFile, data, round);
    clearOutputs();
    const { partMs: _warmParts, ...warm } = await plainWrite(plainFile, data, round);
    bareRuns.push({ bare, warm });
    process.stdout.write(
      `  bare ${round}   write       ${mbps(data.totalBytes, bare.seconds).toFixed(0).padStart(6)} MB/s  ${bare.seconds.toFixed(2)} s` +
        ` (warm memory: ${mbps(data.totalBytes, warm.seconds).toFixed(0)} MB/s)\n`,
    );
  }

  // Diagnostics: MD5 alone, and the file copies an assembling completion would make.
  clearOutputs();
  const { md5, streamCp, bufferedCp } = await diagnostics(data, plainFile, settings.settleMs);
  clearOutputs();
  const loadAfter = machineLoad();
  const idleAfterBytes = await child.rss();
  await svc.cleanup();

  const bytes = data.totalBytes;
  const med = (f: (r: UploadRun) => number) => median(uploadRuns.map(f));
  const medBase = (f: (r: BaselineRun) => number) => median(baseRuns.map(f));
  const baseS = medBase((r) => r.seconds);
  const medBare = (f: (r: BareRun) => number) => median(bareRuns.map(f));
  const bareS = medBare((r) => r.bare.seconds);
  const warmS = medBare((r) => r.warm.seconds);
  const baseCpuS = medBase((r) => r.cpuS);
  const bareCpuS = medBare((r) => r.bare.cpuS);
  const [totalS, putS, completeS] = [med((r) => r.totalS), med((r) => r.putS), med((r) => r.completeS)];
  const serverCpuS = med((r) => r.serverCpuPutS + r.serverCpuCompleteS);
  const split = { user: med((r) => r.serverCpu.user), sys: med((r) => r.serverCpu.sys), main: med((r) => r.serverCpu.main) };
  // Each round's baseline over its upload: the two ran back to back, so load that moves over
  // minutes mostly cancels out (a diagnostic; the target stays the ratio of the medians).
  const paired = uploadRuns.map((u) => {
    const base = baseRuns.find((r) => r.round === u.round);
    return base ? base.seconds / u.totalS : NaN;
  });
  const worst = [...warmupRuns, ...uploadRuns].reduce((a, b) => (b.rssGrowthBytes > a.rssGrowthBytes ? b : a));
  const runsOf = (xs: number[]) => xs.map((x) => x.toFixed(2)).join(' / ');
  const row = (name: string, s: number, cpu: string, note = '') =>
    `${name.padEnd(44)}${mbps(bytes, s).toFixed(0).padStart(7)}${s.toFixed(2).padStart(9)}${cpu.padStart(16)}  ${note}`;
  const cpuServer = (f: (r: UploadRun) => number) => `${med(f).toFixed(2)} srv`;
  const splitNote =
    `user ${split.user.toFixed(2)} s, system ${split.sys.toFixed(2)} s; event-loop thread ${split.main.toFixed(2)} s, ` +
    `other threads (MD5, libuv pool, GC) ${(split.user + split.sys - split.main).toFixed(2)} s`;
  const lines = [
    '',
    `${'name'.padEnd(44)}${'MB/s'.padStart(7)}${'seconds'.padStart(9)}${'CPU s'.padStart(16)}  runs (s); medians of ${settings.rounds}`,
    row("baseline: write + each part's MD5", baseS, baseCpuS.toFixed(2), runsOf(baseRuns.map((r) => r.seconds))),
    row('upload: first PUT -> complete response', totalS, cpuServer((r) => r.serverCpuPutS + r.serverCpuCompleteS), runsOf(uploadRuns.map((r) => r.totalS))),
    row('  PUT phase (4 in flight)', putS, cpuServer((r) => r.serverCpuPutS), `${runsOf(uploadRuns.map((r) => r.putS))}; client CPU ${med((r) => r.clientCpuPutS).toFixed(2)} s`),
    row('  complete (rename + probe)', completeS, cpuServer((r) => r.serverCpuCompleteS), `${runsOf(uploadRuns.map((r) => r.completeS))}; status ${[...new Set(uploadRuns.map((r) => r.status))].join(', ')}`),
    row('diag: bare fs.createWriteStream, no MD5', bareS, bareCpuS.toFixed(2), runsOf(bareRuns.map((r) => r.bare.seconds))),
    row('  same, at once again (warm memory)', warmS, medBare((r) => r.warm.cpuS).toFixed(2), runsOf(bareRuns.map((r) => r.warm.seconds))),
    row('diag: MD5 alone, 64 KiB updates', md5.seconds, md5.cpuS.toFixed(2)),
    row('diag: file copy, createReadStream pipe', streamCp.seconds, streamCp.cpuS.toFixed(2)),
    row('diag: file copy, 8 MiB FileHandle r/w', bufferedCp.seconds, bufferedCp.cpuS.toFixed(2)),
    `per-round ratios (baseline s / upload s, same round): ${paired.map((r) => r.toFixed(2)).join(' / ')}; median ${median(paired).toFixed(3)}`,
    `server CPU per upload: ${serverCpuS.toFixed(2)} s (${splitNote}); baseline ${baseCpuS.toFixed(2)} s; bare write ${bareCpuS.toFixed(2)} s`,
    `server RSS during uploads: worst ${worst.round < 1 ? 'warm-up' : `round ${worst.round}`}, ${mb(worst.rssBeforeBytes).toFixed(1)} MB before, ` +
      `peak ${mb(worst.rssPeakBytes).toFixed(1)} MB, ${worst.rssSamples} samples; idle after all rounds ${mb(idleAfterBytes).toFixed(1)} MB`,
    `machine: load ${loadBefore.load1.toFixed(2)} -> ${loadAfter.load1.toFixed(2)}, CPU pressure ${loadBefore.cpuPressure10s ?? '?'}% -> ` +
      `${loadAfter.cpuPressure10s ?? '?'}% on ${os.availableParallelism()} CPUs (client, API server and PostgreSQL share them)`,
    '',
  ];
  process.stdout.write(lines.join('\n') + '\n');

  const partMiB = settings.partBytes / MIB;
  const baseline = { label: "write + each part's MD5, same bytes", value: mbps(bytes, baseS) };
  const worstAt = worst.round < 1 ? 'warm-up' : `round ${worst.round}`;
  const result: BenchResult = {
    ...resultHeader('upload',
      `Upload: ${mb(settings.fileBytes).toFixed(0)} MB in ${partMiB} MiB parts, ${settings.inFlight} in flight, to local storage, ` +
        "against writing the same bytes and taking each part's MD5",
      { before: loadNoteBefore, after: loadNote() }, database, settings),
    figures: [
      figure({ name: 'upload_throughput', figure: 'upload, first part PUT -> complete response', unit: 'MB/s', value: mbps(bytes, totalS), baseline,
        target: { on: 'ratio', op: '>=', limit: RATIO_TARGET }, roundRatios: paired }),
      figure({ name: 'put_phase_throughput', figure: `PUT phase alone (${settings.inFlight} in flight)`, unit: 'MB/s', value: mbps(bytes, putS), baseline,
        roundRatios: uploadRuns.map((u) => (baseRuns.find((r) => r.round === u.round)?.seconds ?? NaN) / u.putS) }),
      figure({ name: 'server_cpu_per_upload', figure: 'API server CPU seconds per upload (first PUT -> complete response)', unit: 's', value: serverCpuS,
        baseline: { label: "write + each part's MD5, CPU seconds", value: baseCpuS } }),
      figure({ name: 'upload_vs_plain_write', figure: 'diag: upload vs a bare write (no MD5)', unit: 'MB/s', value: mbps(bytes, totalS),
        baseline: { label: 'plain fs.createWriteStream, same bytes', value: mbps(bytes, bareS) } }),
      figure({ name: 'md5_only', figure: 'diag: MD5 alone over the same bytes, one thread', unit: 'MB/s', value: mbps(bytes, md5.seconds) }),
      figure({ name: 'rss_growth', figure: `API server RSS growth during an upload (worst: ${worstAt})`, unit: 'MB', value: mb(worst.rssGrowthBytes),
        target: { on: 'value', op: '<', limit: RSS_GROWTH_TARGET_MB } }),
    ],
    charts: [
      {
        id: 'part-times',
        title: `Time per ${partMiB} MiB part: PUT to the API (${settings.inFlight} in flight) vs written and hashed in the baseline`,
        unit: 'ms',
        series: [
          { label: `part PUT, ${settings.inFlight} in flight`, role: 'measured', samples: compactSamples(uploadRuns.flatMap((r) => r.partMs)) },
          { label: 'part written and hashed (baseline)', role: 'baseline', samples: compactSamples(baseRuns.flatMap((r) => r.partMs)) },
        ],
      },
    ],
    notes: [
      `${settings.rounds} round(s) alternating which side goes first${settings.warmup ? `, after ${settings.warmup} untimed warm-up round(s)` : ''}; medians. ` +
        `Before every timed phase outputs are deleted, \`sync\` runs and the bench waits ${settings.settleMs} ms, so both sides start with the same page-cache state.`,
      `Baseline: the work an upload cannot avoid, in one process: the same bytes written in 1 MiB slices with FileHandle.writev (libuv's threadpool, ${settings.baselineWrites} under way) while the main thread takes each part's MD5 ` +
        "(the ETag a part PUT answers with; the service hashes nothing else), i.e. the service's parallelism: a write under way per part in flight, one hashing thread. " +
        "Its MD5s are checked against the upload's ETags for the same round.",
      `Upload time runs from the first part PUT to the complete response (rename and probe included): PUTs ${putS.toFixed(2)} s + complete ${completeS.toFixed(2)} s.`,
      `CPU seconds per upload, server side: ${serverCpuS.toFixed(2)} s (${splitNote}); baseline ${baseCpuS.toFixed(2)} s; bare write ${bareCpuS.toFixed(2)} s; ` +
        `MD5 alone ${md5.cpuS.toFixed(2)} s; client ${med((r) => r.clientCpuPutS).toFixed(2)} s.`,
      'MB = 10^6 bytes. The RSS target is checked against every upload, the warm-up (a cold server) included.',
    ],
    details: {
      machine_load: { before: loadBefore, after: loadAfter },
      baseline: {
        median_s: baseS,
        mb_per_s: mbps(bytes, baseS),
        median_cpu_s: baseCpuS,
        bare_write_median_s: bareS,
        bare_write_median_cpu_s: bareCpuS,
        bare_write_warm_memory_median_s: warmS,
        runs: baseRuns.map(({ partMs: _p, ...r }) => r),
      },
      upload: {
        median_total_s: totalS,
        median_put_s: putS,
        median_complete_s: completeS,
        median_server_cpu_s: serverCpuS,
        median_server_cpu_split: split,
        runs: uploadRuns.map(({ partMs: _p, etags: _e, ...r }) => r),
      },
      diagnostics: { md5_only: md5, stream_copy: streamCp, buffered_copy_8mib: bufferedCp },
      ratio: { value: baseS / totalS, per_round: paired, per_round_median: median(paired), put_phase_only: baseS / putS, vs_bare_write: bareS / totalS, vs_warm_memory_bare_write: warmS / totalS },
      rss_growth_mb: {
        per_round: [...warmupRuns, ...uploadRuns].map((r) => ({ round: r.round, before: mb(r.rssBeforeBytes), peak: mb(r.rssPeakBytes), growth: mb(r.rssGrowthBytes) })),
        idle_after_all: mb(idleAfterBytes),
      },
    },
  };
  finish(result);
}

if (process.env.BENCH_UPLOAD_STORAGE === 's3') runBench('upload-s3', () => withBenchService('upload-s3', { watchdogMinutes: null }, s3UploadMain));
else runBench('upload', () => withBenchService('upload', { watchdogMinutes: null }, main));
