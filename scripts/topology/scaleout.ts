// One scale-out proof, start to finish, for `npm run topology` and test/scale-out.test.ts alike:
// start the topology, set up the teams, drive the load while probing the limits, wait for every
// run and webhook, check, and stop everything (always, also when something throws).
import { setTimeout as delay } from 'node:timers/promises';
import { Client, type ErrorBody } from './client.js';
import { checkCeiling, checkLedger, checkProcesses, checkRateLimit, checkRuns, checkShutdown, checkWebhooks, dbRuns, type Check, type DbRun } from './checks.js';
import { startTopology, type Topology } from './cluster.js';
import { driveLoad, inPool, pollToFinal, type RunRecord } from './load.js';
import { probeCeiling, probeRateLimit, type CeilingProbe, type RateProbe } from './probes.js';
import { makeMedia, setupTeams, type LoadTeam, type TeamRef } from './setup.js';

export interface ScaleOutOptions {
  databaseUrl: string;
  runs: number;
  concurrency: number;
  seed: number;
  pollMs: number;
  forceLoopback: boolean;
  workerConcurrency: number;
  /** Every run must be final this long after the load starts. */
  loadDeadlineMs: number;
  /** A probe per limit (requests per minute), at once. */
  rateLimit: { limits: number[]; durationMs: number };
  ceiling: { limit: number; attempts: number };
  log: (line: string) => void;
}

export interface ScaleOutReport {
  mode: 'netns' | 'loopback';
  reason: string;
  apis: { name: string; url: string; pid: number }[];
  workers: { name: string; ip: string; pid: number }[];
  checks: Check[];
  records: RunRecord[];
  runs: DbRun[];
  rates: RateProbe[];
  ceiling: Omit<CeilingProbe, 'team'>;
  webhooks: Record<string, number>;
  /** Answers each API process logged, by status. */
  requests: Record<string, Record<string, number>>;
  client: { backoffs: number; networkRetries: number; polls: number };
  timings: { startupMs: number; setupMs: number; loadMs: number; checksMs: number; totalMs: number };
}

/** One output of a succeeded run per tool, fetched through the API that did not start the run. */
async function checkDownloads(top: Topology, client: Client, records: RunRecord[], teams: LoadTeam[]): Promise<Check> {
  const failures: string[] = [];
  const byTool = new Map<string, RunRecord>();
  for (const r of records) if (r.final?.status === 'succeeded' && r.final.outputs.length && !byTool.has(r.tool)) byTool.set(r.tool, r);
  for (const r of byTool.values()) {
    const team = teams.find((t) => t.teamId === r.teamId);
    const key = team?.keys[0]?.key ?? '';
    const api = top.apis.find((a) => a.name !== r.startedVia) ?? top.apis[0]!;
    for (const out of r.final?.outputs ?? []) {
      let res = await client.patient<{ url: string } & ErrorBody>(api.url, key, 'GET', `/v1/runs/${r.runId}/outputs/${out.asset_id}/url`);
      for (let i = 0; res.status === 409 && i < 30; i++) {
        await delay(1000);
        res = await client.patient<{ url: string } & ErrorBody>(api.url, key, 'GET', `/v1/runs/${r.runId}/outputs/${out.asset_id}/url`);
      }
      if (res.status !== 200) {
        failures.push(`${r.tool} output ${out.asset_id}: ${res.status} ${res.body.error?.code}`);
        continue;
      }
      const file = await fetch(res.body.url, { signal: AbortSignal.timeout(30_000) });
      const bytes = Buffer.from(await file.arrayBuffer());
      if (file.status !== 200 || bytes.length !== out.size_bytes) failures.push(`${r.tool} output ${out.asset_id}: ${file.status}, ${bytes.length} bytes for size_bytes ${out.size_bytes}`);
    }
  }
  return { name: 'outputs download through the other API', ok: failures.length === 0 && byTool.size > 0, detail: `${byTool.size} tools: ${[...byTool.keys()].join(', ')}`, failures };
}

const SHUTDOWN_WAIT_MS = 20_000;

/** Reports leave the teams out: their keys stay out of anything printed or saved. */
function withoutTeam<T extends { team: TeamRef }>(probe: T): Omit<T, 'team'> {
  const { team: _team, ...rest } = probe;
  return rest;
}

export async function runScaleOut(opts: ScaleOutOptions): Promise<ScaleOutReport> {
  const t0 = performance.now();
  const client = new Client();
  const media = await makeMedia();
  const top = await startTopology({ databaseUrl: opts.databaseUrl, forceLoopback: opts.forceLoopback, workerConcurrency: opts.workerConcurrency, failFirstOneIn: 5, log: opts.log });
  try {
    const t1 = performance.now();
    const teams = await setupTeams(top, client, media);
    const t2 = performance.now();
    opts.log(`load: ${opts.runs} runs, ${opts.concurrency} in flight, seed ${opts.seed}`);
    // The limit probes run while the load does, against the same two API processes.
    let loadEnd = 0;
    const [records, rates, ceiling] = await Promise.all([
      driveLoad(top, client, teams, { runs: opts.runs, concurrency: opts.concurrency, seed: opts.seed, pollMs: opts.pollMs, deadlineMs: opts.loadDeadlineMs }).finally(() => (loadEnd = performance.now())),
      Promise.all(opts.rateLimit.limits.map((limit) => probeRateLimit(top, client, { limit, durationMs: opts.rateLimit.durationMs, parallel: 3 }))),
      probeCeiling(top, client, { limit: opts.ceiling.limit, attempts: opts.ceiling.attempts, databaseUrl: opts.databaseUrl, png: media.png[0]! }),
    ]);
    const deadline = Date.now() + opts.loadDeadlineMs;
    await inPool(ceiling.records, 4, (rec) => pollToFinal(top, client, rec, ceiling.team.keys[0]!.key, opts.pollMs, deadline));
    const all = [...records, ...ceiling.records];
    const t3 = performance.now();
    opts.log(`load: done in ${((loadEnd - t2) / 1000).toFixed(1)} s; checking`);

    const allTeams = [...teams, ...rates.map((r) => r.team), ceiling.team];
    const runs = await dbRuns(top, allTeams.map((t) => t.teamId));
    const webhooks = await checkWebhooks(top, allTeams, 90_000);
    const checks = [
      ...checkRuns(all, runs),
      await checkLedger(top, allTeams, runs),
      webhooks.check,
      ...rates.map(checkRateLimit),
      checkCeiling(ceiling),
      await checkDownloads(top, client, records, teams),
      checkProcesses(top),
    ];
    const t4 = performance.now();
    const requests: Record<string, Record<string, number>> = {};
    for (const a of top.apis) requests[a.name] = Object.fromEntries([...a.proc.requestsByStatus].sort(([x], [y]) => x - y).map(([s, n]) => [String(s), n]));
    // Processes are idle now; their shutdown grace is 5 s (TOOLRUN_SHUTDOWN_GRACE_SECONDS).
    checks.push(checkShutdown(await top.stopProcesses(SHUTDOWN_WAIT_MS), SHUTDOWN_WAIT_MS));
    return {
      mode: top.network.mode,
      reason: top.network.reason,
      apis: top.apis.map((a) => ({ name: a.name, url: a.url, pid: a.proc.pid })),
      workers: top.workers.map((w) => ({ name: w.name, ip: w.host.ip, pid: w.pid })),
      checks,
      records: all,
      runs,
      rates: rates.map(withoutTeam),
      ceiling: withoutTeam(ceiling),
      webhooks: webhooks.figures,
      requests,
      client: { backoffs: client.backoffs, networkRetries: client.networkRetries, polls: all.reduce((s, r) => s + r.polls, 0) },
      timings: { startupMs: t1 - t0, setupMs: t2 - t1, loadMs: loadEnd - t2, checksMs: t4 - t3, totalMs: t4 - t0 },
    };
  } finally {
    await top.stop();
  }
}

