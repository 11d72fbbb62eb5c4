// What a rendered page can do to the service (issue 34): the hostile pages of
// test/helpers/brand-hostile.ts rendered by brand_kit_extract as the worker runs it, this test
// process standing for the service. Its memory stays within the documented bound and the page
// cannot change what the reading returns (item 1); the browser's whole process tree is bounded in
// memory, by a cgroup or by the watchdog (item 3); a browser that does not answer its close and a
// render controller killed outright leave no process behind (items 3, 4); the browser's command
// line carries one --disable-features (item 4). Uses Debian's chromium.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { after, before, describe, test, type TestContext } from 'node:test';
import pino from 'pino';
import { resolveMediaBinaries } from '../src/media/binaries.js';
import { createBrandKitRunner } from '../src/tools/brand-kit/run.js';
import type { BrandKit } from '../src/tools/brand-kit/schema.js';
import type { RunContext } from '../src/tools/manifest.js';
import { assertValidKit } from './helpers/brand-kit.js';
import { HOSTILE_BRAND, HostileSite } from './helpers/brand-hostile.js';
import { CHROMIUM } from './helpers/browser.js';
import { commandLine, descendants, isChromium, stillRunning, type ProcessEntry } from './helpers/process-tree.js';
import { waitFor } from './helpers/worker.js';

const present = fs.existsSync(CHROMIUM);
const MISSING = `no Chromium at ${CHROMIUM}: install Debian's chromium (apt-get install chromium), as .ci/run does`;
const MB = 1024 * 1024;
/** What one render may add to the service process's resident memory (docs/decisions.md, "Render isolation"). */
const SERVICE_BOUND = 32 * MB;

let site: HostileSite;
const workDirs: string[] = [];
before(async () => {
  site = await new HostileSite().start();
});
after(async () => {
  await site.close();
  for (const d of workDirs) fs.rmSync(d, { recursive: true, force: true });
});

/** A logger whose lines (parsed) land in `lines`. */
function capture(lines: Record<string, unknown>[]): pino.Logger {
  return pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
}

function context(url: string, opts: { signal?: AbortSignal; memoryMb?: number; logger?: pino.Logger } = {}): RunContext {
  // Named as the worker names a run's work directory (long: the browser's socket must not be in it).
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-run-00000000-0000-4000-8000-000000000001-'));
  workDirs.push(workDir);
  return {
    runId: '00000000-0000-4000-8000-000000000001',
    teamId: '00000000-0000-4000-8000-000000000002',
    values: { url },
    files: {},
    workDir,
    signal: opts.signal ?? new AbortController().signal,
    progress: () => {},
    media: resolveMediaBinaries(),
    logger: opts.logger ?? pino({ level: 'silent' }),
    outbound: { allowPrivate: true },
    browserPath: CHROMIUM,
    ...(opts.memoryMb ? { browserMemoryMb: opts.memoryMb } : {}),
    limits: { ffmpegThreads: 2, maxOutputBytes: 4 * 1024 ** 3 },
  };
}

async function kitOf(run: ReturnType<ReturnType<typeof createBrandKitRunner>>): Promise<BrandKit> {
  const data = (await run)[0]?.data;
  assertValidKit(data);
  return data;
}

/** Watches this process while a render runs: its peak resident memory, its event loop, and every process it started. */
function watch() {
  const seen = new Map<string, ProcessEntry>();
  const base = process.memoryUsage.rss();
  let peak = base;
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const sample = () => {
    peak = Math.max(peak, process.memoryUsage.rss());
    for (const p of descendants()) seen.set(`${p.pid}:${p.start}`, p);
  };
  // Unref'd: a test that fails before stop() must not keep the file's process alive.
  const timer = setInterval(sample, 20).unref();
  return {
    seen: () => [...seen.values()],
    stop() {
      clearInterval(timer);
      sample();
      loop.disable();
      return { rise: peak - base, maxLagMs: loop.max / 1e6, processes: [...seen.values()] };
    },
  };
}

/** Every Chromium process the render started is gone, and so is the render's controller process. */
async function nothingLeft(processes: ProcessEntry[]): Promise<void> {
  const ours = processes.filter((p) => isChromium(p) || commandLine(p.pid).some((a) => a.includes('render-child')));
  assert.ok(processes.some(isChromium), 'the render started Chromium');
  // The render has returned: its processes are killed, the kernel may take a moment to end them.
  await waitFor('the render processes to end', async () => (stillRunning(ours).length === 0 ? true : undefined), 3000);
}

function skipWithoutChromium(t: TestContext): boolean {
  if (present) return false;
  t.skip(MISSING);
  return true;
}

/** A plain page renders (and the render code is loaded before anything is measured). */
async function warm(): Promise<void> {
  const kit = await kitOf(createBrandKitRunner()(context(`${site.url}/plain`)));
  assert.deepEqual(kit.warnings, []);
  assert.equal(kit.fonts.find((f) => f.roles.includes('heading'))?.family, HOSTILE_BRAND.heading);
}

describe('item 1: a page cannot make the service hold its content', () => {
  test('a 40 M-character text node: the kit is read, the service holds at most its bound and keeps answering', async (t) => {
    if (skipWithoutChromium(t)) return;
    await warm();
    const w = watch();
    const kit = await kitOf(createBrandKitRunner()(context(`${site.url}/bighidden`)));
    const { rise, maxLagMs, processes } = w.stop();
    t.diagnostic(`service RSS rise ${Math.round(rise / MB)} MB, event loop max lag ${Math.round(maxLagMs)} ms`);
    assert.equal(kit.name, HOSTILE_BRAND.name);
    assert.equal(kit.fonts.find((f) => f.roles.includes('heading'))?.family, HOSTILE_BRAND.heading);
    assert.ok(kit.warnings.some((w) => /rendered page is larger than the 2 MB limit/.test(w)), JSON.stringify(kit.warnings));
    assert.ok(rise < SERVICE_BOUND, `the service's RSS rose ${Math.round(rise / MB)} MB`);
    assert.ok(maxLagMs < 1000, `the event loop stalled ${Math.round(maxLagMs)} ms`);
    await nothingLeft(processes);
  });

  test('a page that redefines the globals a reading script uses: the reading is what the browser computed', async (t) => {
    if (skipWithoutChromium(t)) return;
    const w = watch();
    const kit = await kitOf(createBrandKitRunner()(context(`${site.url}/globals`)));
    const { rise, processes } = w.stop();
    t.diagnostic(`service RSS rise ${Math.round(rise / MB)} MB`);
    const role = (r: 'heading' | 'body') => kit.fonts.find((f) => f.roles.includes(r))?.family;
    assert.equal(role('heading'), HOSTILE_BRAND.heading);
    assert.equal(role('body'), HOSTILE_BRAND.body);
    assert.ok(!kit.fonts.some((f) => /Evil/.test(f.family)), JSON.stringify(kit.fonts.map((f) => f.family.slice(0, 40))));
    assert.equal(kit.roles.primary, HOSTILE_BRAND.primary);
    assert.ok(rise < SERVICE_BOUND, `the service's RSS rose ${Math.round(rise / MB)} MB`);
    await nothingLeft(processes);
  });

  test('a page flooding the console with 100 M-character lines: the service holds at most its bound', async (t) => {
    if (skipWithoutChromium(t)) return;
    const w = watch();
    const kit = await kitOf(createBrandKitRunner({}, { render: { budgetMs: 8000 } })(context(`${site.url}/console`)));
    const { rise, maxLagMs, processes } = w.stop();
    t.diagnostic(`service RSS rise ${Math.round(rise / MB)} MB, event loop max lag ${Math.round(maxLagMs)} ms; warnings ${JSON.stringify(kit.warnings)}`);
    assert.equal(kit.name, HOSTILE_BRAND.name);
    assert.ok(rise < SERVICE_BOUND, `the service's RSS rose ${Math.round(rise / MB)} MB`);
    assert.ok(maxLagMs < 1000, `the event loop stalled ${Math.round(maxLagMs)} ms`);
    await nothingLeft(processes);
  });
});

/** The memory cgroup this process is in, when it is one this process may make children in (cgroup v1 or v2). */
function writableCgroup(): string | null {
  try {
    const lines = fs.readFileSync('/proc/self/cgroup', 'utf8').split('\n');
    const v1 = lines.find((l) => /^\d+:memory:/.test(l))?.split(':')[2];
    const v2 = lines.find((l) => l.startsWith('0::'))?.slice(3);
    for (const dir of [v1 === undefined ? null : path.join('/sys/fs/cgroup/memory', v1), v2 === undefined ? null : path.join('/sys/fs/cgroup', v2), v2 === undefined ? null : path.join('/sys/fs/cgroup/unified', v2)]) {
      if (!dir || !fs.existsSync(path.join(dir, 'cgroup.procs'))) continue;
      const controllers = path.join(dir, 'cgroup.subtree_control');
      if (fs.existsSync(controllers) && !/\bmemory\b/.test(fs.readFileSync(controllers, 'utf8')) && !fs.existsSync(path.join(dir, 'memory.limit_in_bytes'))) continue;
      fs.accessSync(dir, fs.constants.W_OK);
      return dir;
    }
  } catch {
    // not readable, not writable
  }
  return null;
}

/** The cgroups this process made for its renders (other test files may render at the same time). */
const renderDirs = (cgroup: string) => fs.readdirSync(cgroup).filter((d) => d.startsWith(`toolrun-render-${process.pid}-`));

describe('item 3: the browser process tree is bounded in memory', () => {
  for (const cgroup of [true, false]) {
    test(`${cgroup ? 'cgroup' : 'watchdog (cgroup off)'}: a page committing 2.5 GB fails its render past the bound, and nothing of it survives`, async (t) => {
      if (skipWithoutChromium(t)) return;
      const parent = writableCgroup();
      if (cgroup && !parent) return t.skip('no memory cgroup this process may write to: the watchdog test covers the bound');
      const w = watch();
      let during: string[] = [];
      const sampling = cgroup ? setInterval(() => (during = [...new Set([...during, ...renderDirs(parent!)])]), 50).unref() : null;
      const started = Date.now();
      const lines: Record<string, unknown>[] = [];
      const kit = await kitOf(createBrandKitRunner({}, { render: { cgroup } })(context(`${site.url}/memory`, { memoryMb: 700, logger: capture(lines) })));
      if (sampling) clearInterval(sampling);
      const { processes } = w.stop();
      t.diagnostic(`took ${Date.now() - started} ms; warnings ${JSON.stringify(kit.warnings)}`);
      assert.equal(kit.name, HOSTILE_BRAND.name, 'the static reader still reads the page');
      assert.ok(kit.warnings.some((w) => /could not be rendered \(the page needed more than 700 MB of memory\)/.test(w)), JSON.stringify(kit.warnings));
      const crossed = lines.find((l) => l.msg === 'brand_kit_extract: the render crossed its memory bound');
      assert.ok(crossed, 'the log says the render crossed its bound');
      assert.equal(crossed.over_by, cgroup ? 'cgroup' : 'watchdog');
      assert.match(String(crossed.render_memory_bound), cgroup ? /^cgroup v[12]$/ : /^watchdog$/);
      if (cgroup) {
        assert.equal(during.length, 1, 'one cgroup was made for the render');
        assert.deepEqual(renderDirs(parent!), [], 'and removed after it');
      }
      await nothingLeft(processes);
    });
  }

  for (const cgroup of [true, false]) {
    test(`${cgroup ? 'cgroup' : 'watchdog'}: the render's controller process killed outright: a clear warning, and no Chromium process outlives it`, async (t) => {
      if (skipWithoutChromium(t)) return;
      if (cgroup && !writableCgroup()) return t.skip('no memory cgroup this process may write to');
      const w = watch();
      const run = kitOf(createBrandKitRunner({}, { render: { cgroup } })(context(`${site.url}/busy`)));
      const controller = await waitFor('the render controller and its Chromium', async () => {
        const seen = w.seen();
        const node = seen.find((p) => commandLine(p.pid).some((a) => a.includes('render-child')));
        return node && seen.filter(isChromium).length >= 3 ? node : undefined;
      }, 30_000);
      process.kill(controller.pid, 'SIGKILL');
      const kit = await run;
      const { processes } = w.stop();
      assert.ok(kit.warnings.some((w) => /could not be rendered \(the render process ended/.test(w)), JSON.stringify(kit.warnings));
      await nothingLeft(processes);
    });
  }
});

describe('item 4: the close is bounded; one --disable-features', () => {
  test('a browser that no longer answers: the render ends within its budget and a short grace, and nothing survives', async (t) => {
    if (skipWithoutChromium(t)) return;
    const w = watch();
    const started = Date.now();
    const asked = site.served.length;
    // 20 s: a loaded two-core machine has taken over 10 s to start Chromium and load the page,
    // and a budget spent before the page loads leaves nothing for this test to stop.
    const budgetMs = 20_000;
    const run = kitOf(createBrandKitRunner({}, { render: { budgetMs, navigationMs: budgetMs - 2000 } })(context(`${site.url}/busy`)));
    let ended = false;
    const markEnded = (): void => {
      ended = true;
    };
    void run.then(markEnded, markEnded);
    // Every Chromium process stopped once the page is loading: the browser can answer nothing, its close included.
    const stopped = await waitFor(
      'Chromium to load the page',
      async () => {
        if (ended) throw new Error('the run ended before Chromium loaded the page (the budget was spent starting the browser)');
        const chromium = w.seen().filter(isChromium);
        return site.served.slice(asked).includes('/busy') && chromium.some((p) => commandLine(p.pid).includes('--remote-debugging-pipe')) ? chromium : undefined;
      },
      budgetMs + 10_000,
    );
    for (const p of stillRunning(stopped)) {
      try {
        process.kill(p.pid, 'SIGSTOP');
      } catch {
        // ended meanwhile (a helper process)
      }
    }
    t.diagnostic(`stopped ${stopped.length} Chromium processes`);
    const kit = await run;
    const took = Date.now() - started;
    const { processes } = w.stop();
    t.diagnostic(`took ${took} ms`);
    // The budget, the 3 s grace to close, and a little for the kill and the static reading.
    assert.ok(took < budgetMs + 3000 + 2000, `took ${took} ms`);
    assert.ok(kit.warnings.some((w) => /could not be rendered/.test(w)), JSON.stringify(kit.warnings));
    await nothingLeft(processes);
  });

  test("the browser's command line carries one --disable-features, with Playwright's features and the service's", async (t) => {
    if (skipWithoutChromium(t)) return;
    const w = watch();
    const controller = new AbortController();
    const run = kitOf(createBrandKitRunner()(context(`${site.url}/busy`, { signal: controller.signal })));
    const browser = await waitFor('the browser process', async () => w.seen().find((p) => isChromium(p) && commandLine(p.pid).includes('--remote-debugging-pipe')), 30_000);
    const args = commandLine(browser.pid);
    controller.abort(new Error('done'));
    await assert.rejects(run, /done/);
    const { processes } = w.stop();
    const switches = args.filter((a) => a.startsWith('--disable-features='));
    assert.equal(switches.length, 1, JSON.stringify(switches));
    const features = switches[0]!.slice('--disable-features='.length).split(',');
    for (const f of ['Prerender2', 'NetworkPrediction', 'DestroyProfileOnBrowserClose', 'HttpsUpgrades']) assert.ok(features.includes(f), `${f} in ${switches[0]}`);
    await nothingLeft(processes);
  });
});
