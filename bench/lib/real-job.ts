/**
 * bench:runs' real job (issues 3 and 29): image_upscale sized to about BENCH_REAL_SECONDS, run
 * through the API (a process with metrics, so the runner's own phase is known) and directly in
 * that same process, rounds alternating which goes first; the fixed cost per run is the API
 * interval minus the runner's phase, with its parts, and the paired API - direct difference.
 */
import fs from 'node:fs';
import type pg from 'pg';
import { loadConfig } from '../../src/config/config.js';
import { createLogger } from '../../src/logger.js';
import { resolveMediaBinaries } from '../../src/media/binaries.js';
import { outputsChecked, runTimes, type Api, type RunNotifier } from './api.js';
import { cpuWithChildren, type AppChild } from './app-children.js';
import { benchRegistry, runDirect } from './bench-tools.js';
import { makeImage, UPSCALE_MAX_MP } from './media-gen.js';
import { fixedParts, medianParts, paired, phaseDelta, scrapeAfterCheck, scrapePhases, type FixedParts } from './phases.js';
import { median } from './report.js';

export async function realTool(
  api: Api,
  child: AppChild,
  pool: pg.Pool,
  notifier: RunNotifier,
  dir: string,
  settings: { realSeconds: number; realRounds: number; timeoutMs: number; metricsToken: string },
) {
  const config = loadConfig(process.env);
  const deps = { config, media: resolveMediaBinaries(), logger: createLogger('warn'), tools: benchRegistry() };
  await runDirect({ tool: 'image_upscale', values: {}, files: [await makeImage(dir, 'warm.jpg', 0.3, 'image')] }, deps); // libvips start-up
  const cal = await runDirect({ tool: 'image_upscale', values: {}, files: [await makeImage(dir, 'cal.jpg', 2, 'image')] }, deps);
  const mp = Math.min(UPSCALE_MAX_MP, Math.max(0.3, (2 * settings.realSeconds * 1000) / cal.ms));
  const file = await makeImage(dir, 'real.jpg', mp, 'image');
  const steps = (await runDirect({ tool: 'image_upscale', values: {}, files: [file], steps: true }, deps)).steps;
  if (!steps) throw new Error('no engine steps measured');
  const fileId = await api.upload(fs.readFileSync(file.path), file.fileName, file.mime);
  await child.direct({ tool: 'image_upscale', values: {}, files: [file] }); // the API process's libvips and network start-up
  const rounds: { first: 'api' | 'direct'; parts: FixedParts; direct: number; directCpu: number; created: number; client: number; queue: number; exec: number; apiCpu: number }[] = [];
  for (let r = 0; r < settings.realRounds; r++) {
    const viaApi = async () => {
      const before = await scrapePhases(child.url, settings.metricsToken, 'image_upscale');
      const cpu0 = cpuWithChildren(child.pid);
      const t0 = performance.now();
      const run = await api.startRun('image_upscale', { image: [fileId] });
      const client = (await notifier.wait(run.id, settings.timeoutMs)) - t0;
      const apiCpu = cpuWithChildren(child.pid) - cpu0;
      if ((await api.getRun(run.id)).status !== 'succeeded') throw new Error(`run ${run.id} did not succeed`);
      await outputsChecked(pool, run.id);
      const phases = phaseDelta(before, await scrapeAfterCheck(child.url, settings.metricsToken, 'image_upscale', before));
      const [t] = await runTimes(pool, [run.id]);
      if (!t?.started || !t.finished) throw new Error('run without timestamps');
      return { created: t.finished - t.created, client, queue: t.started - t.created, exec: t.finished - t.started, apiCpu, phases };
    };
    // In the API process, idle meanwhile: a runner in another process ran 100-500 ms apart from
    // the API's (its memory already mapped, or not), which is no cost of the engine.
    const direct = async () => {
      const cpu0 = cpuWithChildren(child.pid);
      const d = await child.direct({ tool: 'image_upscale', values: {}, files: [file] });
      return { direct: d.ms, directCpu: cpuWithChildren(child.pid) - cpu0 };
    };
    const first = r % 2 ? 'direct' : 'api';
    const a = first === 'direct' ? await direct() : null;
    const { phases, ...b } = await viaApi();
    const d = a ?? (await direct());
    rounds.push({ first, parts: fixedParts({ ms: b.created, queueMs: b.queue, phases }, d.direct), ...d, ...b });
  }
  const m = (k: Exclude<keyof (typeof rounds)[number], 'first' | 'parts'>) => median(rounds.map((x) => x[k]));
  // Per round, then the median: both sides of a round share whatever else the machine was doing.
  const fixed = {
    created: paired(rounds.map((x) => ({ a: x.created, b: x.direct }))),
    client: paired(rounds.map((x) => ({ a: x.client, b: x.direct }))),
    exec: paired(rounds.map((x) => ({ a: x.exec, b: x.direct }))),
  };
  return { image: `${file.info.width}x${file.info.height} JPEG (${mp.toFixed(1)} MP) -> 2x`, calibrationMs: cal.ms, steps, rounds, fixed, parts: medianParts(rounds.map((x) => x.parts)), median: {
    direct: m('direct'), directCpu: m('directCpu'), created: m('created'), client: m('client'), queue: m('queue'), exec: m('exec'), apiCpu: m('apiCpu'),
  } };
}
