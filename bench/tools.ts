/**
 * `npm run bench:tools`: each of the five tools through the API against the same work done
 * directly (issue 5, "Benchmarks"). Not a test.
 *
 * The API runs as a child process (bench/app-server.ts `api`: the real app and, beside it, the
 * workers exactly as `toolrun serve` starts them; TOOLRUN_ALLOW_PRIVATE_NETWORK=1 so brand_kit_extract
 * may read the loopback test site of test/helpers/brand-site.ts). The direct side is another child
 * (`direct`) that calls the tool's runner with a RunContext built as the executor builds it: same
 * binaries, same limits, no database, no storage, no output checks. Each side is its own process so
 * its memory can be read alone: peak RSS is the sum over the process and its children (ffmpeg,
 * ffprobe) from /proc every 100 ms; CPU seconds include reaped children.
 *
 * Inputs are generated (bench/lib/media-gen.ts) and sized per tool so the direct call takes about
 * BENCH_JOB_SECONDS here: one direct call at a base size, then scaled linearly (within the tool's
 * limits). API wall time is created_at -> finished_at; the client's (POST -> the NOTIFY of the final
 * commit, so nothing polls the API meanwhile) is shown too; API CPU is counted over that span. CPU
 * seconds move far less with the machine's load than wall time, so their ratio is shown as well.
 * Rounds alternate which side goes first and wait for the previous run's output check; medians. Extras: image_upscale against ImageMagick's
 * `convert -resize 200%` when ImageMagick is installed, video_upscale against its bare ffmpeg command.
 *
 * Environment: DATABASE_URL (else an embedded PostgreSQL), BENCH_JOB_SECONDS (3), BENCH_ROUNDS
 * (3), BENCH_TOOLS (comma-separated ids; all five), BENCH_LOG_LEVEL (warn), BENCH_MAX_MINUTES (10).
 */
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createLogger } from '../src/logger.js';
import type { RunPhase } from '../src/metrics/metrics.js';
import { resolveMediaBinaries } from '../src/media/binaries.js';
import { H264, MP4 } from '../src/tools/video/common.js';
import { BrandSite } from '../test/helpers/brand-site.js';
import { Api, outputsChecked, prepareTeam, RunNotifier, runTimes } from './lib/api.js';
import { cpuWithChildren, sampleTree, startAppChild, type AppChild } from './lib/app-children.js';
import type { DirectFile, EngineSteps } from './lib/bench-tools.js';
import { setupBenchDatabase, type BenchDatabase } from './lib/db.js';
import { makeClip, makeImage, UPSCALE_MAX_MP } from './lib/media-gen.js';
import { phaseDelta, PHASES, scrapeAfterCheck, scrapePhases } from './lib/phases.js';
import { envInt, envNum, figure, finish, fmt, loadNote, machine, median, MIB, passFail, pct, table, watchdog, type BenchResult, runBench, sayFailure } from './lib/report.js';

const OVERHEAD_TARGET = 0.05;
const TARGET_APPLIES_MS = 2000;
const ALL = ['image_upscale', 'image_color_grade', 'video_upscale', 'video_transition', 'brand_kit_extract'];
const settings = {
  jobSeconds: envNum('BENCH_JOB_SECONDS', 3, 0.1),
  rounds: envInt('BENCH_ROUNDS', 3, 1),
  tools: (process.env.BENCH_TOOLS || ALL.join(',')).split(',').map((s) => s.trim()),
  apiLogLevel: process.env.BENCH_LOG_LEVEL || 'warn',
  timeoutMs: 600_000,
};

interface Spec {
  id: string;
  /** What the scale measures, for the table. */
  unit: string;
  base: number;
  min: number;
  max: number;
  values(site: string): Record<string, unknown>;
  make(dir: string, scale: number, tag: string): Promise<DirectFile[]>;
}

const clip = (dir: string, name: string, seconds: number, width: number, slot: string) =>
  makeClip(dir, name, { width, height: 360, seconds: Math.round(seconds * 10) / 10, fps: 25, slot });
const SPECS: Spec[] = [
  { id: 'image_upscale', unit: 'MP JPEG', base: 2, min: 0.3, max: UPSCALE_MAX_MP, values: () => ({}), make: async (d, s, t) => [await makeImage(d, `up-${t}.jpg`, s, 'image')] },
  {
    id: 'image_color_grade',
    unit: 'MP JPEG',
    base: 2,
    min: 0.3,
    max: 40,
    values: () => ({ preset: 'warm_film', contrast: 20, grain: 30 }),
    make: async (d, s, t) => [await makeImage(d, `grade-${t}.jpg`, s, 'image')],
  },
  { id: 'video_upscale', unit: 's 640x360 -> 1080p', base: 2, min: 1, max: 60, values: () => ({ target: '1080p' }), make: async (d, s, t) => [await clip(d, `vu-${t}.mp4`, s, 640, 'video')] },
  {
    id: 'video_transition',
    unit: 's x 2 clips, dissolve 1 s',
    base: 2,
    min: 1.5,
    max: 30,
    values: () => ({ style: 'dissolve', duration_seconds: 1 }),
    make: async (d, s, t) => [await clip(d, `a-${t}.mp4`, s, 640, 'clips'), await clip(d, `b-${t}.mp4`, s, 480, 'clips')],
  },
  {
    id: 'brand_kit_extract',
    unit: 'MP PNG x 3 + test site',
    base: 1,
    min: 0.2,
    max: 24,
    values: (site) => ({ url: `${site}/` }),
    make: async (d, s, t) => Promise.all([0, 1, 2].map((i) => makeImage(d, `kit-${t}-${i}.png`, s, 'files'))),
  },
];

interface Side {
  ms: number;
  cpuS: number;
  peakBytes: number;
  idleBytes: number;
}

async function measured(pid: number, fn: () => Promise<number>): Promise<Side> {
  const rss = sampleTree(pid);
  const cpu0 = cpuWithChildren(pid);
  const ms = await fn();
  const { before, peak } = rss.stop();
  return { ms, cpuS: cpuWithChildren(pid) - cpu0, peakBytes: peak, idleBytes: before };
}

/** A command run once, timed, with the peak RSS of its process tree. */
function external(cmd: string, args: string[]): Promise<Side> {
  const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const pid = child.pid ?? 0;
  const rss = sampleTree(pid, 50);
  const t0 = performance.now();
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      const ms = performance.now() - t0;
      const { before, peak } = rss.stop();
      if (code === 0) resolve({ ms, cpuS: Number.NaN, peakBytes: peak, idleBytes: before });
      else reject(new Error(`${cmd} exited ${String(code)}: ${stderr.slice(-500)}`));
    });
  });
}

function imageMagick(): Promise<string | null> {
  return new Promise((resolve) =>
    execFile('convert', ['-version'], (err, stdout) => resolve(!err && /^Version: ImageMagick/m.test(stdout) ? stdout.split('\n')[0] ?? '' : null)),
  );
}

interface ToolResult {
  id: string;
  input: string;
  calibrationMs: number[];
  steps: EngineSteps | null;
  direct: Side[];
  api: (Side & { clientMs: number; queueMs: number; phases: Record<RunPhase, number> })[];
  extra: { label: string; side: Side | null; note: string }[];
}

async function benchTool(spec: Spec, api: Api, apiChild: AppChild, direct: AppChild, pool: pg.Pool, notifier: RunNotifier, dir: string, site: string): Promise<ToolResult> {
  const phasesNow = () => scrapePhases(apiChild.url, METRICS_TOKEN, spec.id);
  const job = (files: DirectFile[]) => ({ tool: spec.id, values: spec.values(site), files });
  await direct.direct(job(await spec.make(dir, spec.min, 'warm')));
  // Two sizes, a line through them (fixed cost + cost per unit), solved for the wanted time.
  const t1 = (await direct.direct(job(await spec.make(dir, spec.base, 'cal1')))).ms;
  const t2 = (await direct.direct(job(await spec.make(dir, 2 * spec.base, 'cal2')))).ms;
  const perUnit = Math.max((t2 - t1) / spec.base, t2 / (8 * spec.base));
  const fixed = Math.max(0, t1 - perUnit * spec.base);
  const scale = Math.min(spec.max, Math.max(spec.min, (settings.jobSeconds * 1000 - fixed) / perUnit));
  const files = await spec.make(dir, scale, 'final');
  const inputs: Record<string, unknown> = { ...spec.values(site) };
  for (const f of files) {
    const id = await api.upload(fs.readFileSync(f.path), f.fileName, f.mime);
    inputs[f.slot] = [...((inputs[f.slot] as string[] | undefined) ?? []), id];
  }
  const result: ToolResult = { id: spec.id, input: `${fmt(scale, 1)} ${spec.unit}`, calibrationMs: [t1, t2], steps: null, direct: [], api: [], extra: [] };
  const viaApi = async () => {
    let runId = '';
    const before = await phasesNow();
    const side = await measured(apiChild.pid, async () => {
      const t0 = performance.now();
      runId = (await api.startRun(spec.id, inputs)).id;
      return (await notifier.wait(runId, settings.timeoutMs)) - t0;
    });
    if ((await api.getRun(runId)).status !== 'succeeded') throw new Error(`${spec.id} run ${runId} did not succeed`);
    await outputsChecked(pool, runId);
    const phases = phaseDelta(before, await scrapeAfterCheck(apiChild.url, METRICS_TOKEN, spec.id, before));
    const [t] = await runTimes(pool, [runId]);
    const queueMs = (t?.started ?? Number.NaN) - (t?.created ?? 0);
    result.api.push({ ...side, ms: (t?.finished ?? Number.NaN) - (t?.created ?? 0), clientMs: side.ms, queueMs, phases });
  };
  const viaDirect = async () => result.direct.push(await measured(direct.pid, async () => (await direct.direct(job(files))).ms));
  for (let r = 0; r < settings.rounds; r++) {
    if (r % 2) await viaDirect();
    await viaApi();
    if (!(r % 2)) await viaDirect();
  }
  result.steps = (await direct.direct({ ...job(files), steps: true })).steps;
  const out = path.join(dir, `extra-${spec.id}`);
  if (spec.id === 'image_upscale') {
    const im = await imageMagick();
    result.extra.push(
      im
        ? { label: 'ImageMagick convert -resize 200% -quality 90', side: await external('convert', [files[0]!.path, '-resize', '200%', '-quality', '90', `${out}.jpg`]), note: im }
        : { label: 'ImageMagick convert -resize 200%', side: null, note: 'skipped: ImageMagick is not installed (`convert -version` does not name it)' },
    );
  }
  if (spec.id === 'video_upscale') {
    const t = String(resolveThreads());
    const args = ['-hide_banner', '-nostdin', '-v', 'error', '-y', '-threads', t, '-i', files[0]!.path, '-filter_threads', t, '-map', '0:v:0', '-map', '0:a:0?'];
    args.push('-vf', 'scale=-2:1080:flags=lanczos', '-vsync', 'passthrough', ...H264, '-c:a', 'copy', ...MP4, '-threads', t, `${out}.mp4`);
    result.extra.push({ label: 'bare ffmpeg, the runner\'s arguments', side: await external(resolveMediaBinaries().ffmpeg, args), note: 'no ffprobe, no -progress' });
  }
  return result;
}

const resolveThreads = () => envInt('TOOLRUN_FFMPEG_THREADS', 2, 1);
/** GET /metrics of the API child: the run phases are read from there. */
const METRICS_TOKEN = 'bench-tools-metrics-token';

async function main(): Promise<void> {
  const unknown = settings.tools.filter((t) => !ALL.includes(t));
  if (unknown.length) throw new Error(`BENCH_TOOLS: unknown ${unknown.join(', ')}`);
  const logger = createLogger('warn');
  const children: AppChild[] = [];
  let database: BenchDatabase | null = null;
  let pool: pg.Pool | null = null;
  let notifier: RunNotifier | null = null;
  const site = new BrandSite();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-bench-tools-'));
  let cleaning: Promise<void> | null = null;
  const cleanup = () =>
    (cleaning ??= (async () => {
      for (const c of children) await c.stop().catch(() => undefined);
      // Before the database is dropped (WITH FORCE): its LISTEN client would die of 57P01 unheard.
      await notifier?.close().catch(() => undefined);
      await pool?.end().catch(() => undefined);
      await site.close().catch(() => undefined);
      await database?.teardown();
      fs.rmSync(dir, { recursive: true, force: true });
    })());
  process.once('SIGINT', () => void cleanup().finally(() => process.exit(130)));
  watchdog('tools', cleanup);
  try {
    const loadBefore = loadNote();
    process.stdout.write(`setting up (${loadBefore.text})...\n`);
    database = await setupBenchDatabase(logger);
    await prepareTeam(database.url, database.keyId, logger);
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
    await site.start();
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: database.url,
      HOST: '127.0.0.1',
      LOG_LEVEL: settings.apiLogLevel,
      TOOLRUN_ENV: 'development',
      TOOLRUN_DEMO_SEED: '0',
      TOOLRUN_ALLOW_PRIVATE_NETWORK: '1',
      TOOLRUN_DATA_DIR: path.join(dir, 'data'),
    };
    const apiChild = await startAppChild('api', { ...env, BENCH_WORKERS: 'all', TOOLRUN_METRICS_TOKEN: METRICS_TOKEN });
    children.push(apiChild);
    const direct = await startAppChild('direct', env);
    children.push(direct);
    const api = new Api(apiChild.url, database.key);
    notifier = new RunNotifier(database.url);
    await notifier.start();
    const results: ToolResult[] = [];
    for (const spec of SPECS.filter((s) => settings.tools.includes(s.id))) {
      process.stdout.write(`  ${spec.id}...\n`);
      results.push(await benchTool(spec, api, apiChild, direct, pool, notifier, dir, site.url));
    }
    api.close();
    await notifier.close();
    notifier = null;
    const loadAfter = loadNote();
    await cleanup();

    const mib = (b: number) => fmt(b / MIB, 0);
    const summary = results.map((r) => {
      const d = median(r.direct.map((x) => x.ms));
      const a = median(r.api.map((x) => x.ms));
      const overhead = a / d - 1;
      const applies = d >= TARGET_APPLIES_MS;
      return { id: r.id, direct: d, api: a, client: median(r.api.map((x) => x.clientMs)), overhead, applies, pass: !applies || overhead < OVERHEAD_TARGET,
        apiCpu: median(r.api.map((x) => x.cpuS)), directCpu: median(r.direct.map((x) => x.cpuS)),
        apiPeak: Math.max(...r.api.map((x) => x.peakBytes)), apiIdle: Math.min(...r.api.map((x) => x.idleBytes)),
        directPeak: Math.max(...r.direct.map((x) => x.peakBytes)), directIdle: Math.min(...r.direct.map((x) => x.idleBytes)),
        phases: { queue: median(r.api.map((x) => x.queueMs)), ...Object.fromEntries(PHASES.map((ph) => [ph, 1000 * median(r.api.map((x) => x.phases[ph]))])) } as Record<RunPhase | 'queue', number> };
    });
    const rows = results.map((r, i) => {
      const s = summary[i]!;
      const st = r.steps ? r.steps.probeMs + r.steps.sha256Ms + r.steps.moveMs : Number.NaN;
      return [r.id, r.input, fmt(s.direct / 1000, 2), fmt(s.api / 1000, 2), pct(s.overhead), fmt(s.client / 1000, 2), fmt(st / 1000, 2), fmt(s.directCpu, 2), fmt(s.apiCpu, 2), pct(s.apiCpu / s.directCpu - 1),
        `${mib(s.directPeak)} (${mib(s.directIdle)})`, `${mib(s.apiPeak)} (${mib(s.apiIdle)})`, s.applies ? passFail(s.pass) : 'n/a (<2 s)'];
    });
    const phaseRows = results.map((r, i) => {
      const s = summary[i]!;
      const p = s.phases;
      const counted = p.queue + p.inputs + p.runner + p.store + p.commit;
      const ms = (x: number) => fmt(x, 0);
      return [r.id, ms(s.direct), ms(p.queue), ms(p.inputs), ms(p.runner), pct(p.runner / s.direct - 1), ms(p.store), ms(p.commit), ms(s.api - counted), ms(s.api), ms(p.check)];
    });
    const lines = [
      '',
      `Where the API's time goes, ms (medians of each phase over the rounds; other = API - the phases before it):`,
      table(['tool', 'direct', 'queue', 'inputs', 'runner', 'runner vs direct', 'store', 'commit', 'other', 'API', 'check (after)'], phaseRows),
      'queue = created_at -> started_at; inputs = the input files made readable; store = outputs probed, checksummed and moved into storage;',
      'commit = the success transaction; check = the outputs read back and compared with their checksums, after finished_at.',
      '',
      `Tools: API (created_at -> finished_at) vs the runner called directly; ${settings.rounds} rounds, medians; jobs sized for ~${settings.jobSeconds} s direct`,
      table(['tool', 'input', 'direct s', 'API s', 'overhead', 'client s', 'out steps s', 'direct CPU s', 'API CPU s', 'CPU +', 'direct peak MiB (idle)', 'API peak MiB (idle)', `< ${pct(OVERHEAD_TARGET)}`], rows),
      'out steps = the engine\'s output handling timed alone on the direct output (check: an image the encoder vouched for by its header, others decoded; sha256 unless the encoder gave it; move into storage).',
      'peak = RSS summed over the process and its children (ffmpeg, ffprobe), sampled every 100 ms; idle = the same just before the job.',
      ...results.flatMap((r) =>
        r.extra.map((e) => `${r.id} vs ${e.label}: ${e.side ? `${fmt(e.side.ms / 1000, 2)} s, peak ${mib(e.side.peakBytes)} MiB (1 run)` : '-'}  [${e.note}]`),
      ),
      `load: before ${loadBefore.text}; after ${loadAfter.text}`,
      '',
    ];
    process.stdout.write(lines.join('\n') + '\n');
    const result: BenchResult = {
      benchmark: 'tools',
      title: 'Tools: each of the five tools through the API against its runner called directly',
      at: new Date().toISOString(),
      machine: machine(),
      load: { before: loadBefore, after: loadAfter },
      database: { server: database.server, version: database.version },
      settings,
      figures: [
        ...results.map((r, i) => {
          const s = summary[i]!;
          return figure({ name: `${r.id}_overhead`, figure: `${r.id}, ${r.input}, through the API`, unit: 's', value: s.api / 1000,
            baseline: { label: 'the runner called directly', value: s.direct / 1000 }, target: { on: 'ratio', op: '<', limit: 1 + OVERHEAD_TARGET },
            notApplicable: s.applies ? null : `the direct job took under ${TARGET_APPLIES_MS / 1000} s`, note: `overhead ${pct(s.overhead)}` });
        }),
        ...results.flatMap((r, i) =>
          r.extra.flatMap((e) =>
            e.side ? [figure({ name: `${r.id}_vs_external`, figure: `diag: ${r.id} runner called directly vs ${e.label} (1 run)`, unit: 's',
              value: summary[i]!.direct / 1000, baseline: { label: e.label, value: e.side.ms / 1000 } })] : [],
          ),
        ),
      ],
      charts: results.map((r) => ({
        id: r.id.replace(/_/g, '-'),
        title: `${r.id} (${r.input}): time per run, API vs direct`,
        unit: 's',
        series: [
          { label: 'through the API (created_at -> finished_at)', role: 'measured' as const, samples: r.api.map((x) => x.ms / 1000) },
          { label: 'runner called directly', role: 'baseline' as const, samples: r.direct.map((x) => x.ms / 1000) },
        ],
      })),
      notes: [
        `Inputs are generated and sized so the direct call takes about ${settings.jobSeconds} s here; ${settings.rounds} round(s) alternating which side goes first, medians.`,
        'The direct side is a separate process calling the runner with a RunContext built as the executor builds it (same binaries and limits; no database, storage or output checks).',
        `The target (overhead < ${pct(OVERHEAD_TARGET)}) applies to jobs whose direct call takes ${TARGET_APPLIES_MS / 1000} s or more.`,
        ...results.flatMap((r) => r.extra.filter((e) => !e.side).map((e) => `${r.id} vs ${e.label}: ${e.note}.`)),
      ],
      details: { summary, results, target: { overhead: OVERHEAD_TARGET, applies_to_jobs_over_ms: TARGET_APPLIES_MS } },
    };
    finish(result);
  } catch (err) {
    sayFailure('tools', err);
    throw err;
  } finally {
    await cleanup();
  }
}

runBench('tools', main);
