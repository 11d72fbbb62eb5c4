/**
 * `npm run bench:render-isolation`: what one brand_kit_extract render costs the service and the
 * machine (issue 34), through the API as `toolrun serve` runs it (an API child with its workers,
 * TOOLRUN_BROWSER_PATH set, loopback allowed). For each page, one run at a time:
 *   - the API process's peak resident memory during the run (VmHWM, reset with clear_refs 5
 *     before the run) and how much it rose above the RSS before it;
 *   - /healthz's slowest answer while the run lasted (asked every 100 ms);
 *   - the peak of the render's process tree (every process under the API's: the render's
 *     controller and Chromium), summed RssAnon + RssShmem (what the kernel cannot drop; the
 *     service's watchdog counts the same) and summed PSS, sampled every 100 ms;
 *   - the run's end: status, and the kit's warnings about the render.
 * Pages: the hostile ones of test/helpers/brand-hostile.ts (plain, bigtext, bighidden, globals, console,
 * memory) and the shared sites (../shared/fixtures/brandkit-sites). Writes
 * bench/results/render-isolation.json; docs/decisions.md ("Render isolation (issue 34)") quotes it.
 *
 * Environment: DATABASE_URL (else an embedded PostgreSQL), BENCH_BROWSER_PATH (/usr/bin/chromium),
 * BENCH_PAGES (comma-separated subset: plain,bigtext,bighidden,globals,console,memory,sites), BENCH_MAX_MINUTES (10).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createLogger } from '../src/logger.js';
import { HostileSite } from '../test/helpers/brand-hostile.js';
import { Api, prepareTeam, type RunJson } from './lib/api.js';
import { processTree, startAppChild, type AppChild } from './lib/app-children.js';
import { loadTruth, serveSites, sitesMissing, type SiteServer } from './lib/brandkit-sites.js';
import { setupBenchDatabase, type BenchDatabase } from './lib/db.js';
import { figure, fmt, loadNote, MIB, resultHeader, runBench, sleep, table, watchdog, writeResults, type BenchResult, type Figure } from './lib/report.js';
import { serviceEnv } from './lib/service.js';

const browserPath = process.env.BENCH_BROWSER_PATH || '/usr/bin/chromium';
const wanted = new Set((process.env.BENCH_PAGES || 'plain,bigtext,bighidden,globals,console,memory,sites').split(','));
const RUN_TIMEOUT_MS = 120_000;
/** The hostile pages of issue 34's review, each a way a page pushed data or memory at the service. */
const HOSTILE = ['bigtext', 'bighidden', 'globals', 'console', 'memory'];
/**
 * What the service may hold more during one render (docs/decisions.md, "Render isolation"): the
 * DOM (2 MiB), the kept resources (12 MiB) and the static analysis of a page that has neither a
 * large stylesheet nor large images, with room for the allocator: the tests' bound too.
 */
const SERVICE_RISE_MIB = 32;
/** An event-loop stall a /healthz probe would notice: before issue 34 a page stalled it 2.5 s. */
const HEALTHZ_MS = 1000;
/** The tree's bound (TOOLRUN_BROWSER_MEMORY_MB's default) and the watchdog's second line (1.5x its resident sum). */
const TREE_BOUND_MIB = Number(process.env.TOOLRUN_BROWSER_MEMORY_MB || 1024);

/** The figures: the service untouched by every hostile page, the tree held to its bound, the sites rendered. */
function figuresOf(rows: Row[]): Figure[] {
  const plain = rows.find((r) => r.page === 'plain');
  const base = (label: string, v: number | undefined) => (v === undefined || !Number.isFinite(v) ? null : { label, value: v });
  const out: Figure[] = [];
  for (const r of rows.filter((x) => HOSTILE.includes(x.page))) {
    const died = r.status.startsWith('API process died');
    out.push(figure({
      name: `service_rise_${r.page}`, figure: `service RSS rise during the render of /${r.page}`, unit: 'MiB',
      value: Number.isFinite(r.apiRiseMiB) ? r.apiRiseMiB : Number.POSITIVE_INFINITY,
      baseline: base('plain page', plain?.apiRiseMiB), target: { on: 'value', op: '<=', limit: SERVICE_RISE_MIB },
      invalid: died ? 'the API process died' : null, note: r.status.slice(0, 80),
    }));
    out.push(figure({
      name: `healthz_${r.page}`, figure: `longest /healthz answer during the render of /${r.page}`, unit: 'ms', value: r.healthzMaxMs,
      baseline: base('plain page', plain?.healthzMaxMs), target: { on: 'value', op: '<', limit: HEALTHZ_MS }, invalid: died ? 'the API process died' : null,
    }));
  }
  const memory = rows.find((r) => r.page === 'memory');
  if (memory) {
    out.push(figure({
      name: 'tree_memory_page', figure: 'render tree resident peak on the 10 x 256 MB page (summed per process, sampled every 100 ms)', unit: 'MiB',
      value: memory.treeResidentPeakMiB, baseline: base('plain page', plain?.treeResidentPeakMiB),
      target: { on: 'value', op: '<=', limit: TREE_BOUND_MIB * 1.5 },
      note: `bound ${TREE_BOUND_MIB} MiB (the cgroup's, where there is one), the watchdog's second line at 1.5x`,
    }));
  }
  const sites = rows.filter((r) => !HOSTILE.includes(r.page) && r.page !== 'plain');
  if (sites.length) {
    const rendered = sites.filter((r) => r.status === 'succeeded' && !r.renderWarnings.some((w) => /could not be rendered/.test(w)));
    out.push(figure({
      name: 'sites_rendered', figure: 'shared sites rendered (succeeded, no render warning)', unit: 'sites', value: rendered.length,
      target: { on: 'value', op: '>=', limit: sites.length },
    }));
    out.push(figure({
      name: 'sites_tree_pss_max', figure: 'largest render tree PSS among the shared sites (sizing)', unit: 'MiB',
      value: Math.max(...sites.map((r) => r.treePssPeakMiB)), baseline: base('plain page', plain?.treePssPeakMiB),
    }));
  }
  return out;
}

const status = (pid: number) => fs.readFileSync(`/proc/${pid}/status`, 'utf8');
const kb = (text: string, field: string) => 1024 * Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(text)?.[1] ?? 0);

/** The render's processes: everything under the API process, not the API itself. */
function renderTree(apiPid: number): { resident: number; pss: number } {
  let resident = 0;
  let pss = 0;
  for (const pid of processTree(apiPid)) {
    if (pid === apiPid) continue;
    try {
      const s = status(pid);
      resident += kb(s, 'RssAnon') + kb(s, 'RssShmem');
      pss += kb(fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'), 'Pss');
    } catch {
      // gone meanwhile
    }
  }
  return { resident, pss };
}

interface Row {
  page: string;
  status: string;
  apiRssBeforeMiB: number;
  apiPeakMiB: number;
  apiRiseMiB: number;
  healthzMaxMs: number;
  treeResidentPeakMiB: number;
  treePssPeakMiB: number;
  seconds: number;
  renderWarnings: string[];
}

interface KitJson {
  warnings?: string[];
}

async function kitOf(api: Api, run: RunJson & { outputs?: { asset_id: string; file_name: string }[] }): Promise<KitJson | null> {
  const output = run.outputs?.find((o) => o.file_name === 'brand-kit.json');
  if (!output) return null;
  for (let i = 0; i < 100; i++) {
    const res = await fetch(`${api.base}/v1/runs/${run.id}/outputs/${output.asset_id}/url`, { headers: { authorization: `Bearer ${api.key}` } });
    if (res.status === 409) {
      await sleep(100);
      continue;
    }
    return (await (await fetch(((await res.json()) as { url: string }).url)).json()) as KitJson;
  }
  return null;
}

async function measure(child: AppChild, api: Api, page: string, url: string): Promise<Row> {
  const pid = child.pid;
  const before = kb(status(pid), 'VmRSS');
  // 5: the peak resident set size starts again from the current RSS (proc(5), clear_refs).
  fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
  let healthzMax = 0;
  let resident = 0;
  let pss = 0;
  let stop = false;
  const healthz = (async () => {
    while (!stop) {
      const t0 = performance.now();
      await fetch(`${api.base}/healthz`).then((r) => r.arrayBuffer()).catch(() => undefined);
      healthzMax = Math.max(healthzMax, performance.now() - t0);
      await sleep(100);
    }
  })();
  const sampler = setInterval(() => {
    const t = renderTree(pid);
    resident = Math.max(resident, t.resident);
    pss = Math.max(pss, t.pss);
  }, 100);
  const t0 = performance.now();
  let run: RunJson & { outputs?: { asset_id: string; file_name: string }[] } = await api.startRun('brand_kit_extract', { url });
  const deadline = Date.now() + RUN_TIMEOUT_MS;
  try {
    while (!['succeeded', 'failed', 'canceled'].includes(run.status) && Date.now() < deadline) {
      await sleep(200);
      if (child.process.exitCode !== null || child.process.signalCode !== null) break;
      run = await api.call('GET', `/v1/runs/${run.id}`, undefined, 200);
    }
  } catch {
    // the API went away: reported below
  }
  const seconds = (performance.now() - t0) / 1000;
  stop = true;
  clearInterval(sampler);
  await healthz;
  const died = child.process.exitCode !== null || child.process.signalCode !== null;
  const peak = died ? Number.NaN : kb(status(pid), 'VmHWM');
  const kit = !died && run.status === 'succeeded' ? await kitOf(api, run) : null;
  return {
    page,
    status: died ? `API process died (${child.process.signalCode ?? child.process.exitCode})` : run.status === 'failed' ? `failed: ${run.error ?? ''}` : run.status,
    apiRssBeforeMiB: before / MIB,
    apiPeakMiB: peak / MIB,
    apiRiseMiB: (peak - before) / MIB,
    healthzMaxMs: healthzMax,
    treeResidentPeakMiB: resident / MIB,
    treePssPeakMiB: pss / MIB,
    seconds,
    renderWarnings: (kit?.warnings ?? []).filter((w) => /render|larger than/.test(w)),
  };
}

async function main(): Promise<void> {
  const logger = createLogger('warn');
  let database: BenchDatabase | null = null;
  let child: AppChild | null = null;
  let hostile: HostileSite | null = null;
  let sites = new Map<string, SiteServer>();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-bench-render-'));
  const cleanup = async () => {
    await child?.stop().catch(() => undefined);
    await hostile?.close().catch(() => undefined);
    for (const s of sites.values()) await s.close().catch(() => undefined);
    await database?.teardown();
    fs.rmSync(dir, { recursive: true, force: true });
  };
  watchdog('render-isolation', cleanup);
  try {
    const loadBefore = loadNote();
    database = await setupBenchDatabase(logger);
    await prepareTeam(database.url, database.keyId, logger);
    hostile = await new HostileSite().start();
    const pages: [string, string][] = ['plain', 'bigtext', 'bighidden', 'globals', 'console', 'memory'].filter((p) => wanted.has(p)).map((p) => [p, `${hostile!.url}/${p}`]);
    if (wanted.has('sites') && !sitesMissing()) {
      sites = await serveSites(loadTruth());
      for (const [name, s] of sites) pages.push([name, `${s.url}/`]);
    }
    const env = serviceEnv({ dir }, database, {
      logLevel: 'error',
      set: { TOOLRUN_ALLOW_PRIVATE_NETWORK: '1', TOOLRUN_BROWSER_PATH: browserPath, BENCH_WORKERS: 'all' },
    });
    const rows: Row[] = [];
    for (const [page, url] of pages) {
      if (!child || child.process.exitCode !== null || child.process.signalCode !== null) child = await startAppChild('api', env);
      const api = new Api(child.url, database.key);
      // One warm-up render (the first loads the render code), not measured.
      if (!rows.length) await measure(child, api, 'warm-up', `${hostile.url}/plain`);
      const row = await measure(child, api, page, url);
      api.close();
      rows.push(row);
      process.stdout.write(`  ${page}: ${row.status}, API peak ${fmt(row.apiPeakMiB, 0)} MiB (+${fmt(row.apiRiseMiB, 0)}), /healthz max ${fmt(row.healthzMaxMs, 0)} ms, tree ${fmt(row.treeResidentPeakMiB, 0)} MiB resident / ${fmt(row.treePssPeakMiB, 0)} MiB PSS, ${fmt(row.seconds, 1)} s\n`);
    }
    await cleanup();
    const out = table(
      ['page', 'status', 'API RSS before MiB', 'API peak MiB', 'rise MiB', '/healthz max ms', 'tree resident MiB', 'tree PSS MiB', 's'],
      rows.map((r) => [r.page, r.status.slice(0, 60), fmt(r.apiRssBeforeMiB, 0), fmt(r.apiPeakMiB, 0), fmt(r.apiRiseMiB, 0), fmt(r.healthzMaxMs, 0), fmt(r.treeResidentPeakMiB, 0), fmt(r.treePssPeakMiB, 0), fmt(r.seconds, 1)]),
    );
    process.stdout.write(`\n${out}\n`);
    for (const r of rows) if (r.renderWarnings.length) process.stdout.write(`${r.page}: ${r.renderWarnings.join(' | ')}\n`);
    const result: BenchResult = {
      ...resultHeader('render-isolation', 'brand_kit_extract render mode: the service process and the render tree, per page',
        { before: loadBefore, after: loadNote() }, database, { browserPath, pages: pages.map(([p]) => p) }),
      figures: figuresOf(rows),
      charts: [],
      notes: [`Per page: the API process (VmHWM after a clear_refs reset), /healthz asked every 100 ms, the render's processes summed from /proc every 100 ms (RssAnon + RssShmem, and PSS):\n\n\`\`\`text\n${out}\n\`\`\``],
      details: { rows },
    };
    process.stdout.write(`results written to ${writeResults(result)}\n`);
  } catch (err) {
    await cleanup();
    throw err;
  }
}

runBench('render-isolation', main);
