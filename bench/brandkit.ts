/**
 * `npm run bench:brandkit`: how right brand_kit_extract is on real web sites (issue 27), not how
 * fast. The shared site set (`../shared/fixtures/brandkit-sites/`, 13 sites as they ship, with
 * `truth.json`) is served on loopback, one port per site; the tool runs THROUGH THE API (an API
 * child with its workers, as bench:tools starts it, TOOLRUN_ALLOW_PRIVATE_NETWORK=1 so it may read
 * loopback) and each kit is downloaded and scored (bench/lib/brandkit-sites.ts): name, primary
 * colour within CIEDE2000 5, heading and body family, the truth logo first. Static mode always;
 * render mode (a second API child with TOOLRUN_BROWSER_PATH) when the service has that setting and
 * Chromium is installed. Prints a per-site table, writes bench/results/brandkit.json and its own
 * section of docs/benchmarks.md. Target: at least 46 of the 51 checks in each mode.
 *
 * Environment: DATABASE_URL (else an embedded PostgreSQL), BENCH_LOG_LEVEL (warn),
 * BENCH_BROWSER_PATH (/usr/bin/chromium), BENCH_MAX_MINUTES (10).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLogger } from '../src/logger.js';
import { Api, prepareTeam, type RunJson } from './lib/api.js';
import { startAppChild, type AppChild } from './lib/app-children.js';
import { CHECKS, loadTruth, passed, scored, scoreKit, serveSites, sitesMissing, type ScoredKit, type SiteScore, type SiteServer } from './lib/brandkit-sites.js';
import { writeSection } from './lib/doc-section.js';
import { setupBenchDatabase, type BenchDatabase } from './lib/db.js';
import { figure, finish, loadNote, machine, sleep, table, watchdog, type BenchResult, runBench, sayFailure } from './lib/report.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TARGET = 46;
/**
 * Checks right per site in static mode before issue 27's changes (this bench on that code, through
 * the API, 29 of 51): no site may do worse.
 */
const BEFORE: Record<string, number> = {
  agency: 4,
  coffeescript: 2,
  codemirror5: 3,
  underscore: 3,
  spectre: 1,
  'animate-css': 3,
  landwind: 1,
  'tldr-pages': 3,
  mpv: 2,
  ramda: 1,
  'web-starter-kit': 5,
  'html5up-forty': 1,
  'tailwind-toolbox': 0,
};
const settings = {
  apiLogLevel: process.env.BENCH_LOG_LEVEL || 'warn',
  browserPath: process.env.BENCH_BROWSER_PATH || '/usr/bin/chromium',
  runTimeoutMs: 120_000,
};

/** Render mode exists once the service reads TOOLRUN_BROWSER_PATH (issue 27's other half). */
function renderUnavailable(): string | null {
  const config = fs.readFileSync(path.join(ROOT, 'src', 'config', 'config.ts'), 'utf8');
  if (!config.includes('TOOLRUN_BROWSER_PATH')) return 'the service has no TOOLRUN_BROWSER_PATH setting in this checkout';
  if (!fs.existsSync(settings.browserPath)) return `no browser at ${settings.browserPath}`;
  return null;
}

interface RunWithOutputs extends RunJson {
  outputs?: { asset_id: string; file_name: string }[];
}

async function kitThroughApi(api: Api, url: string): Promise<{ kit: ScoredKit | null; error: string | null; ms: number }> {
  const t0 = performance.now();
  const started = await api.startRun('brand_kit_extract', { url });
  const deadline = Date.now() + settings.runTimeoutMs;
  let run: RunWithOutputs = started;
  while (!['succeeded', 'failed', 'canceled'].includes(run.status)) {
    if (Date.now() > deadline) throw new Error(`run ${run.id} not final after ${settings.runTimeoutMs} ms`);
    await sleep(100);
    run = await api.call<RunWithOutputs>('GET', `/v1/runs/${run.id}`, undefined, 200);
  }
  const ms = performance.now() - t0;
  if (run.status !== 'succeeded') return { kit: null, error: `${run.status}: ${run.error ?? '?'}`, ms };
  const output = run.outputs?.find((o) => o.file_name === 'brand-kit.json');
  if (!output) return { kit: null, error: 'no brand-kit.json output', ms };
  // The output's URL answers 409 until the engine has checked the stored file.
  for (;;) {
    const res = await fetch(`${api.base}/v1/runs/${run.id}/outputs/${output.asset_id}/url`, { headers: { authorization: `Bearer ${api.key}` } });
    if (res.status === 409 && Date.now() < deadline) {
      await sleep(100);
      continue;
    }
    if (res.status !== 200) throw new Error(`output url answered ${res.status}`);
    const { url: download } = (await res.json()) as { url: string };
    const file = await fetch(download);
    return { kit: (await file.json()) as ScoredKit, error: null, ms };
  }
}

interface Pass {
  mode: 'static' | 'render';
  scores: SiteScore[];
  errors: Record<string, string>;
  seconds: number[];
}

async function runPass(mode: Pass['mode'], env: NodeJS.ProcessEnv, key: string, servers: Map<string, SiteServer>, children: AppChild[]): Promise<Pass> {
  const child = await startAppChild('api', { ...env, BENCH_WORKERS: 'all', ...(mode === 'render' ? { TOOLRUN_BROWSER_PATH: settings.browserPath } : {}) });
  children.push(child);
  const api = new Api(child.url, key);
  const pass: Pass = { mode, scores: [], errors: {}, seconds: [] };
  try {
    for (const t of loadTruth()) {
      const { kit, error, ms } = await kitThroughApi(api, `${servers.get(t.site)!.url}/`);
      pass.seconds.push(ms / 1000);
      if (error) pass.errors[t.site] = error;
      pass.scores.push(scoreKit(kit ?? { name: null, roles: { primary: null }, fonts: [], logos: [] }, t));
    }
  } finally {
    api.close();
    await child.stop().catch(() => undefined);
    children.splice(children.indexOf(child), 1);
  }
  return pass;
}

const mark = (v: boolean | null) => (v === null ? '-' : v ? 'ok' : 'x');
const total = (scores: SiteScore[]) => scores.reduce((n, s) => n + passed(s), 0);
const possible = (scores: SiteScore[]) => scores.reduce((n, s) => n + scored(s), 0);

/** Per site: each check (ok / x / - when the truth is null), the score in each mode. */
function scoreTable(staticPass: Pass, render: Pass | null, renderNote: string | null): string {
  const rows = staticPass.scores.map((s, i) => {
    const r = render?.scores[i];
    const before = BEFORE[s.site];
    return [s.site, ...CHECKS.map((c) => mark(s.checks[c])), before === undefined ? '-' : `${before}/${scored(s)}`, `${passed(s)}/${scored(s)}`, r ? `${passed(r)}/${scored(r)}` : 'not available'];
  });
  const beforeTotal = Object.values(BEFORE).reduce((a, b) => a + b, 0);
  rows.push(['total', ...CHECKS.map((c) => String(staticPass.scores.filter((s) => s.checks[c]).length)), `${beforeTotal}/${possible(staticPass.scores)}`,
    `${total(staticPass.scores)}/${possible(staticPass.scores)}`, render ? `${total(render.scores)}/${possible(render.scores)}` : 'not available']);
  const out = table(['site', ...CHECKS, 'static before', 'static', 'render'], rows);
  return renderNote ? `${out}\nrender: not available (${renderNote})` : out;
}

/** What each kit said where it missed, for diagnosis. */
function missTable(pass: Pass): string {
  const rows = pass.scores.flatMap((s) => CHECKS.filter((c) => s.checks[c] === false).map((c) => [s.site, c, s.got[c] ?? 'null']));
  for (const [site, err] of Object.entries(pass.errors)) rows.push([site, 'run', err]);
  if (!rows.length) return `${pass.mode}: no misses`;
  return table(['site', 'check', `${pass.mode}: the kit said`], rows);
}

async function main(): Promise<void> {
  const missing = sitesMissing();
  if (missing) throw new Error(`bench:brandkit cannot run: ${missing}`);
  const logger = createLogger('warn');
  const children: AppChild[] = [];
  let database: BenchDatabase | null = null;
  let servers = new Map<string, SiteServer>();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-bench-brandkit-'));
  let cleaning: Promise<void> | null = null;
  const cleanup = () =>
    (cleaning ??= (async () => {
      for (const c of children) await c.stop().catch(() => undefined);
      for (const s of servers.values()) await s.close().catch(() => undefined);
      await database?.teardown();
      fs.rmSync(dir, { recursive: true, force: true });
    })());
  process.once('SIGINT', () => void cleanup().finally(() => process.exit(130)));
  watchdog('brandkit', cleanup);
  try {
    const loadBefore = loadNote();
    process.stdout.write(`setting up (${loadBefore.text})...\n`);
    database = await setupBenchDatabase(logger);
    await prepareTeam(database.url, database.keyId, logger);
    servers = await serveSites(loadTruth());
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
    delete env.TOOLRUN_BROWSER_PATH;
    process.stdout.write('  static mode...\n');
    const staticPass = await runPass('static', env, database.key, servers, children);
    const renderNote = renderUnavailable();
    let render: Pass | null = null;
    if (!renderNote) {
      process.stdout.write('  render mode...\n');
      render = await runPass('render', env, database.key, servers, children);
    }
    const loadAfter = loadNote();
    await cleanup();

    const scores = scoreTable(staticPass, render, renderNote);
    const misses = [missTable(staticPass), ...(render ? [missTable(render)] : [])].join('\n\n');
    process.stdout.write(`\n${scores}\n\n${misses}\n`);
    const s = total(staticPass.scores);
    const n = possible(staticPass.scores);
    const worse = (pass: Pass) => pass.scores.filter((x) => passed(x) < (BEFORE[x.site] ?? 0)).map((x) => x.site);
    const result: BenchResult = {
      benchmark: 'brandkit',
      title: 'brand_kit_extract on 13 real web sites: checks right against their ground truth',
      at: new Date().toISOString(),
      machine: machine(),
      load: { before: loadBefore, after: loadAfter },
      database: { server: database.server, version: database.version },
      settings: { ...settings, sites: staticPass.scores.map((x) => x.site), render: renderNote ?? 'ran' },
      figures: [
        figure({ name: 'static_checks', figure: 'static mode: checks right (name, primary, heading, body, logo)', unit: 'checks', value: s,
          target: { on: 'value', op: '>=', limit: TARGET }, note: `of ${n}` }),
        render
          ? figure({ name: 'render_checks', figure: 'render mode: checks right', unit: 'checks', value: total(render.scores),
              target: { on: 'value', op: '>=', limit: TARGET }, note: `of ${possible(render.scores)}` })
          : figure({ name: 'render_checks', figure: 'render mode: checks right', unit: 'checks', value: Number.NaN, target: { on: 'value', op: '>=', limit: TARGET },
              notApplicable: `not available: ${renderNote ?? '?'}` }),
        ...[staticPass, ...(render ? [render] : [])].map((pass) =>
          figure({ name: `${pass.mode}_sites_worse`, figure: `${pass.mode} mode: sites with fewer checks right than the static reader before issue 27`, unit: 'sites',
            value: worse(pass).length, baseline: null, target: { on: 'value', op: '<=', limit: 0 }, note: worse(pass).join(', ') || undefined }),
        ),
      ],
      charts: [],
      notes: [
        'Sites: `../shared/fixtures/brandkit-sites/` (13 real sites as they ship; `truth.json` names the source line of every value), each served from its own loopback port; the tool runs through the API, one run at a time, and the kit (brand-kit.json) is downloaded from the run\'s outputs.',
        'A check is right when: the name matches case-insensitively; the primary colour is within CIEDE2000 5 of the truth (or its `also`); the heading and body families match; the truth logo is first among `logos`. A null truth is not scored (- in the table).',
        '`static before`: the same bench on the code before issue 27 (29 of 51); no site may get fewer now.',
        `Per site (ok right, x wrong, - not scored):\n\n${'```'}text\n${scores}\n${'```'}`,
        `Misses, with what the kit said:\n\n${'```'}text\n${misses}\n${'```'}`,
      ],
      details: { static: staticPass, render, render_note: renderNote },
    };
    writeSection(path.join(ROOT, 'docs', 'benchmarks.md'), 'brandkit', 'brand_kit_extract on 13 real web sites (issue 27)', result, 'bench/brandkit.ts');
    finish(result);
  } catch (err) {
    sayFailure('brandkit', err);
    throw err;
  } finally {
    await cleanup();
  }
}

runBench('brandkit', main);
