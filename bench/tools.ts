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
 * BENCH_JOB_SECONDS here: direct calls at two sizes give a line (within the tool's limits), and
 * calls on the sized input correct it (at most twice) while they miss by more than a quarter.
 *
 * The figure is the fixed cost per run in ms (issue 29: on jobs of 2-3 s a percentage target is the
 * size of the noise): runs.created_at -> finished_at (PostgreSQL now() of the start transaction and
 * of the success transaction's BEGIN) minus the runner call inside it (the worker's `runner` phase
 * from GET /metrics, bench/lib/phases.ts), median over the rounds. It holds the queue (NOTIFY,
 * claim), making the inputs readable, the outputs' checks, checksums and moves into storage; no
 * upload (the inputs are uploaded once beforehand). Against the runner called directly (the call
 * alone, performance.now() around tool.run in the direct child), per round, both sides back to back
 * alternating which goes first, each after the previous run's output check, the median of the
 * per-round differences is a diag: it adds the runner's run-to-run spread (runner delta), which on
 * a shared 2-core machine is seconds per round. The client's interval (before POST -> the NOTIFY of
 * the final commit, so nothing polls the API meanwhile) is shown too; API CPU is counted over it.
 * The percentage is kept as a note. Extras: image_upscale against ImageMagick's `convert -resize
 * 200%` when ImageMagick is installed, video_upscale against its bare ffmpeg command. Then the CPU
 * seconds a Spark buys (issue 34): video_upscale on the review's three clips and two reference
 * clips, image_upscale on a 16 MP JPEG and a 16 MP 16-bit RGBA PNG (bench/lib/work-prices.ts).
 *
 * Environment: DATABASE_URL (else an embedded PostgreSQL), BENCH_JOB_SECONDS (3), BENCH_ROUNDS
 * (7), BENCH_TOOLS (comma-separated ids; all five), BENCH_LOG_LEVEL (warn), BENCH_MAX_MINUTES (25; 10
 * with BENCH_WORK_PRICES=0), BENCH_WORK_PRICES (all; `quick`: the small clips, no images; 0: none),
 * BENCH_DIRECT_IN (`api`: the direct calls in the API process instead of their own; a diagnosis).
 */
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { resolveMediaBinaries } from '../src/media/binaries.js';
import { startCost } from './lib/machine.js';
import { H264, MP4 } from '../src/tools/video/common.js';
import { BrandSite } from '../test/helpers/brand-site.js';
import { Api, outputsChecked, prepareTeam, RunNotifier, runTimes } from './lib/api.js';
import { cpuWithChildren, sampleTree, startAppChild, type AppChild } from './lib/app-children.js';
import type { DirectFile, EngineSteps } from './lib/bench-tools.js';
import { external, imageMagick } from './lib/external-command.js';
import { makeClip, makeImage, UPSCALE_MAX_MP } from './lib/media-gen.js';
import { fixedParts, medianParts, paired, phaseDelta, signedMs, scrapeAfterCheck, scrapePhases, type ApiRound, type FixedParts } from './lib/phases.js';
import { envInt, envNum, figure, finish, fmt, loadNote, median, MIB, passFail, pct, resultHeader, table, type BenchResult, runBench } from './lib/report.js';
import { serviceEnv, withBenchService, type BenchService } from './lib/service.js';
import { benchWorkPrices, type WorkPrices } from './lib/work-prices.js';

/** Issue 29: what the API adds to a run, whatever the job's length. */
const FIXED_TARGET_MS = 150;
const ALL = ['image_upscale', 'image_color_grade', 'video_upscale', 'video_transition', 'brand_kit_extract'];
const settings = {
  jobSeconds: envNum('BENCH_JOB_SECONDS', 3, 0.1),
  rounds: envInt('BENCH_ROUNDS', 7, 1),
  tools: (process.env.BENCH_TOOLS || ALL.join(',')).split(',').map((s) => s.trim()),
  apiLogLevel: process.env.BENCH_LOG_LEVEL || 'warn',
  directIn: process.env.BENCH_DIRECT_IN === 'api' ? 'api' : 'own process',
  /** CPU per Spark of video_upscale's and image_upscale's prices (bench/lib/work-prices.ts): BENCH_WORK_PRICES=0 leaves it out, `quick` runs the small clips only. */
  workPrices: process.env.BENCH_WORK_PRICES === '0' ? 'off' : process.env.BENCH_WORK_PRICES === 'quick' ? 'quick' : 'all',
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
  { id: 'image_color_grade', unit: 'MP JPEG', base: 2, min: 0.3, max: 40, values: () => ({ preset: 'warm_film', contrast: 20, grain: 30 }),
    make: async (d, s, t) => [await makeImage(d, `grade-${t}.jpg`, s, 'image')] },
  { id: 'video_upscale', unit: 's 640x360 -> 1080p', base: 2, min: 1, max: 60, values: () => ({ target: '1080p', method: 'lanczos' }), make: async (d, s, t) => [await clip(d, `vu-${t}.mp4`, s, 640, 'video')] },
  { id: 'video_transition', unit: 's x 2 clips, dissolve 1 s', base: 2, min: 1.5, max: 30, values: () => ({ style: 'dissolve', duration_seconds: 1 }),
    make: async (d, s, t) => [await clip(d, `a-${t}.mp4`, s, 640, 'clips'), await clip(d, `b-${t}.mp4`, s, 480, 'clips')] },
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

/** ms = created_at -> finished_at (Side.ms of the client's interval is clientMs). */
type ApiSide = Side & ApiRound & { clientMs: number };

interface ToolResult {
  id: string;
  input: string;
  calibrationMs: number[];
  steps: EngineSteps | null;
  /** In round order; `first` is the side that ran first in that round. */
  rounds: { first: 'api' | 'direct'; api: ApiSide; direct: Side; parts: FixedParts }[];
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
  const want = settings.jobSeconds * 1000;
  const clamp = (x: number) => Math.min(spec.max, Math.max(spec.min, x));
  let scale = clamp((want - fixed) / perUnit);
  let files = await spec.make(dir, scale, 'final');
  // Two short calls extrapolate poorly (video_upscale came out at 5-7 s for 3, and its output
  // checks grow with the output): a call on the sized input, also the warm-up of its pages, then
  // up to two corrections in proportion while it misses by more than a quarter.
  const checks: number[] = [];
  for (let i = 0; ; i++) {
    checks.push((await direct.direct(job(files))).ms);
    const t = checks[checks.length - 1]!;
    const next = clamp(scale * Math.max(0.25, Math.min(4, want / Math.max(1, t))));
    if (i >= 2 || Math.abs(t - want) <= want / 4 || Math.abs(next - scale) <= scale / 20) break;
    scale = next;
    files = await spec.make(dir, scale, `final${i + 1}`);
  }
  const inputs: Record<string, unknown> = { ...spec.values(site) };
  for (const f of files) {
    const id = await api.upload(fs.readFileSync(f.path), f.fileName, f.mime);
    inputs[f.slot] = [...((inputs[f.slot] as string[] | undefined) ?? []), id];
  }
  const result: ToolResult = { id: spec.id, input: `${fmt(scale, 1)} ${spec.unit}`, calibrationMs: [t1, t2, ...checks], steps: null, rounds: [], extra: [] };
  const viaApi = async (): Promise<ApiSide> => {
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
    return { ...side, ms: (t?.finished ?? Number.NaN) - (t?.created ?? 0), clientMs: side.ms, queueMs, phases };
  };
  const viaDirect = () => measured(direct.pid, async () => (await direct.direct(job(files))).ms);
  for (let r = 0; r < settings.rounds; r++) {
    const first = r % 2 ? 'direct' : 'api';
    const d0 = first === 'direct' ? await viaDirect() : null;
    const a = await viaApi();
    const d = d0 ?? (await viaDirect());
    result.rounds.push({ first, api: a, direct: d, parts: fixedParts(a, d.ms) });
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

async function main(svc: BenchService): Promise<void> {
  const unknown = settings.tools.filter((t) => !ALL.includes(t));
  if (unknown.length) throw new Error(`BENCH_TOOLS: unknown ${unknown.join(', ')}`);
  const { dir, logger } = svc;
  const loadBefore = loadNote();
  process.stdout.write(`setting up (${loadBefore.text})...\n`);
  const database = await svc.database();
  await prepareTeam(database.url, database.keyId, logger);
  const pool = svc.defer(new pg.Pool({ connectionString: database.url, max: 2 }), (p) => p.end());
  const site = svc.defer(new BrandSite(), (s) => s.close());
  await site.start();
  const env = serviceEnv(svc, database, { logLevel: settings.apiLogLevel, set: { TOOLRUN_ALLOW_PRIVATE_NETWORK: '1' } });
  const apiChild = svc.child('api', await startAppChild('api', { ...env, BENCH_WORKERS: 'all', TOOLRUN_METRICS_TOKEN: METRICS_TOKEN }));
  // BENCH_DIRECT_IN=api: the direct calls go to the API process itself, to tell what the engine
  // adds from what running in that process (its memory, its threads) does to the runner.
  const direct = settings.directIn === 'api' ? apiChild : svc.child('direct', await startAppChild('direct', env));
  const api = new Api(apiChild.url, database.key);
  // Closed before the database is dropped (WITH FORCE): its LISTEN client would die of 57P01 unheard.
  const notifier = svc.defer(new RunNotifier(database.url), (n) => n.close());
  await notifier.start();
  const results: ToolResult[] = [];
  for (const spec of SPECS.filter((s) => settings.tools.includes(s.id))) {
    process.stdout.write(`  ${spec.id}...\n`);
    results.push(await benchTool(spec, api, apiChild, direct, pool, notifier, dir, site.url));
  }
  let prices: WorkPrices | null = null;
  if (settings.workPrices !== 'off') {
    process.stdout.write('  CPU per Spark...\n');
    prices = await benchWorkPrices(direct, dir, settings.workPrices === 'quick');
  }
  api.close();
  await notifier.close();
  const loadAfter = loadNote();
  await svc.cleanup();
  const probeStart = await startCost(resolveMediaBinaries().ffprobe);

  const mib = (b: number) => fmt(b / MIB, 0);
  const summary = results.map((r) => {
    const api = r.rounds.map((x) => x.api);
    const dir = r.rounds.map((x) => x.direct);
    const direct = median(dir.map((x) => x.ms));
    const fixed = paired(r.rounds.map((x) => ({ a: x.api.ms, b: x.direct.ms })));
    const parts = medianParts(r.rounds.map((x) => x.parts));
    return { id: r.id, direct, api: median(api.map((x) => x.ms)), client: median(api.map((x) => x.clientMs)), fixed,
      fixedClient: paired(r.rounds.map((x) => ({ a: x.api.clientMs, b: x.direct.ms }))), parts,
      share: fixed.median / direct, pass: parts.engine < FIXED_TARGET_MS,
      apiCpu: median(api.map((x) => x.cpuS)), directCpu: median(dir.map((x) => x.cpuS)),
      apiPeak: Math.max(...api.map((x) => x.peakBytes)), apiIdle: Math.min(...api.map((x) => x.idleBytes)),
      directPeak: Math.max(...dir.map((x) => x.peakBytes)), directIdle: Math.min(...dir.map((x) => x.idleBytes)) };
  });
  const ms = (x: number) => fmt(x, 0);
  const fixedRows = results.map((r, i) => {
    const s = summary[i]!;
    return [r.id, r.input, ms(s.direct), ms(s.api), ms(s.parts.engine), passFail(s.pass), signedMs(s.fixed.median), `${signedMs(s.fixed.min)} .. ${signedMs(s.fixed.max)}`,
      pct(s.share), signedMs(s.fixedClient.median)];
  });
  const partRows = results.map((r, i) => {
    const s = summary[i]!;
    const p = s.parts;
    const st = r.steps ? r.steps.probeMs + r.steps.sha256Ms + r.steps.moveMs : Number.NaN;
    return [r.id, signedMs(p.vsDirect), ms(p.queue), ms(p.inputs), ms(p.store), signedMs(p.rest), ms(p.engine), signedMs(p.runnerDelta), ms(st), ms(p.commit), ms(p.check)];
  });
  const costRows = results.map((r, i) => {
    const s = summary[i]!;
    return [r.id, fmt(s.client / 1000, 2), fmt(s.directCpu, 2), fmt(s.apiCpu, 2), pct(s.apiCpu / s.directCpu - 1),
      `${mib(s.directPeak)} (${mib(s.directIdle)})`, `${mib(s.apiPeak)} (${mib(s.apiIdle)})`];
  });
  const lines = [
    '',
    `Tools: ${settings.rounds} paired rounds; jobs sized for ~${settings.jobSeconds} s direct. fixed = API (created_at -> finished_at) - its runner phase (same run);`,
    `vs direct = API - the runner called directly in ${settings.directIn === 'api' ? 'the API process' : 'its own process'}, per round (min .. max), median of those differences; ` +
      'client = before POST -> NOTIFY of the final commit - direct.',
    table(['tool', 'input', 'direct ms', 'API ms', 'fixed ms', `< ${FIXED_TARGET_MS} ms`, 'vs direct ms', 'rounds min .. max', '% of direct', 'client - direct ms'], fixedRows),
    '',
    'What the difference from direct is made of, ms (each part\'s median over the rounds; in every round vs direct = engine + runner delta):',
    table(['tool', 'vs direct', 'queue', 'inputs', 'store', 'rest', 'fixed (engine)', 'runner API - direct', 'out steps alone', 'commit (after)', 'check (after)'], partRows),
    'queue = created_at -> started_at (NOTIFY, claim); inputs = the input files made readable; store = outputs checked, checksummed and moved into storage;',
    'rest = the interval minus those and the runner (claim answer -> launch, work directory, the success transaction up to its BEGIN); fixed (engine) = API interval - the runner phase;',
    'runner API - direct = the same runner on the same input in the API process against the direct process: noise, or contention inside the API process;',
    'out steps alone = the engine\'s output handling timed alone on the direct output; commit and check come after finished_at (not in the interval; in the client\'s).',
    ...results.map((r) => `${r.id} per round (side first), API - direct ms: ${r.rounds.map((x) => `${signedMs(x.parts.vsDirect)} (${x.first})`).join(', ')}`),
    '',
    'Cost of the run: wall time as the client sees it, CPU and memory',
    table(['tool', 'client s', 'direct CPU s', 'API CPU s', 'CPU +', 'direct peak MiB (idle)', 'API peak MiB (idle)'], costRows),
    'peak = RSS summed over the process and its children (ffmpeg, ffprobe), sampled every 100 ms; idle = the same just before the job.',
    ...results.flatMap((r) =>
      r.extra.map((e) => `${r.id} vs ${e.label}: ${e.side ? `${fmt(e.side.ms / 1000, 2)} s, peak ${mib(e.side.peakBytes)} MiB (1 run)` : '-'}  [${e.note}]`),
    ),
    ...(prices ? ['', ...prices.lines] : []),
    `load: before ${loadBefore.text}; after ${loadAfter.text}`,
    '',
  ];
  process.stdout.write(lines.join('\n') + '\n');
  const result: BenchResult = {
    ...resultHeader('tools', 'Tools: each of the five tools through the API against its runner called directly', { before: loadBefore, after: loadAfter }, database, settings),
    figures: [
      ...results.flatMap((r, i) => {
        const s = summary[i]!;
        const p = s.parts;
        return [
          figure({ name: `${r.id}_fixed_cost`, figure: `${r.id}, ${r.input}: fixed cost per run, API (created_at -> finished_at) - its own runner call`, unit: 'ms',
            value: p.engine, target: { on: 'value', op: '<', limit: FIXED_TARGET_MS }, roundValues: r.rounds.map((x) => x.parts.engine),
            note: `median of ${r.rounds.length} rounds; queue ${ms(p.queue)}, inputs ${ms(p.inputs)}, store ${ms(p.store)}, rest ${ms(p.rest)} ms` }),
          figure({ name: `${r.id}_vs_direct`, figure: `diag: ${r.id}, API (created_at -> finished_at) - the runner called directly, paired rounds`, unit: 'ms',
            value: s.fixed.median, roundValues: r.rounds.map((x) => x.parts.vsDirect), note: `median of ${r.rounds.length} per-round differences, ${signedMs(s.fixed.min)} .. ${signedMs(s.fixed.max)}; ` +
              `${pct(s.share)} of the direct ${ms(s.direct)} ms job; runner in the API - direct ${signedMs(p.runnerDelta)} ms` }),
        ];
      }),
      ...results.flatMap((r, i) =>
        r.extra.flatMap((e) =>
          e.side ? [figure({ name: `${r.id}_vs_external`, figure: `diag: ${r.id} runner called directly vs ${e.label} (1 run)`, unit: 's',
            value: summary[i]!.direct / 1000, baseline: { label: e.label, value: e.side.ms / 1000 } })] : [],
        ),
      ),
      ...(prices?.figures ?? []),
    ],
    charts: results.map((r) => ({
      id: r.id.replace(/_/g, '-'),
      title: `${r.id} (${r.input}): time per run, API vs direct`,
      unit: 's',
      series: [
        { label: 'through the API (created_at -> finished_at)', role: 'measured' as const, samples: r.rounds.map((x) => x.api.ms / 1000) },
        { label: 'runner called directly', role: 'baseline' as const, samples: r.rounds.map((x) => x.direct.ms / 1000) },
      ],
    })),
    notes: [
      `Inputs are generated and sized so the direct call takes about ${settings.jobSeconds} s here; inputs are uploaded once before the rounds (no upload in either interval).`,
      `Fixed cost per run (target < ${FIXED_TARGET_MS} ms) = runs.created_at -> finished_at (the success transaction's BEGIN) minus the runner call inside it ` +
        `(the worker's runner phase, same run), median over ${settings.rounds} rounds: what the engine adds around the runner, free of the runner's run-to-run spread.`,
      `Against the direct process (diag): per round the same interval minus the runner call timed in the direct child, the two sides back to back alternating which ` +
        `goes first; median of the per-round differences. It adds the runner's run-to-run spread (on a loaded 2-core machine, seconds per round) to the fixed cost.`,
      'The direct side is a separate process calling the runner with a RunContext built as the executor builds it (same binaries and limits; no database, storage or output checks).',
      'The API side adds the queue (NOTIFY, claim), making the inputs readable, and the outputs\' checks, checksums and moves into storage; the worker\'s phase timings ' +
        'split each round\'s difference into that (engine) and the runner\'s time in the API process against the direct one (runner delta).',
      `ffprobe: ${probeStart.bin} (${probeStart.version}), ${fmt(probeStart.ms, 0)} ms to start and exit (median of 7, \`-version\`); the engine runs one per video output, inside the fixed cost.`,
      ...results.flatMap((r) => r.extra.filter((e) => !e.side).map((e) => `${r.id} vs ${e.label}: ${e.note}.`)),
      ...(prices ? [...prices.notes, `CPU per Spark, measured:\n\n${'```'}text\n${prices.lines.slice(1).join('\n\n')}\n${'```'}`] : []),
    ],
    details: { summary, results, target: { fixed_ms: FIXED_TARGET_MS }, prices: prices && { clips: prices.clips, images: prices.images } },
  };
  finish(result);
}

// The CPU-per-Spark part adds about 10 minutes here (a learned 8192x2158 frame alone is ~15 CPU s).
runBench('tools', () => withBenchService('tools', { watchdogMinutes: settings.workPrices === 'off' ? 10 : 25 }, main));
