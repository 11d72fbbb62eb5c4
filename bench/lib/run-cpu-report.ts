/**
 * bench:runs' CPU-per-run part (issue 37): runs both sides of run-cpu.ts on a PostgreSQL server of
 * its own and turns them into the report's lines, figures and details.
 */
import type { Logger } from 'pino';
import { loadConfig } from '../../src/config/config.js';
import { startOwnPg } from './own-pg.js';
import { cpuSettings, measureGraphileCpu, measureToolrunCpu, type CpuSettings, type CpuSide, WATCHER_APPLICATION } from './run-cpu.js';
import { figure, fmt, table, type Figure } from './report.js';

/** Issue 37's targets, ms of CPU per run of a job with no work. */
export const SERVICE_TARGET_MS = 12;
export const PG_TARGET_MS = 5;

export interface CpuResult {
  settings: CpuSettings & { slots: number };
  toolrun: CpuSide;
  graphile: CpuSide;
}

export async function measureCpu(env: NodeJS.ProcessEnv, logger: Logger): Promise<CpuResult> {
  const s = cpuSettings();
  const { TOOLRUN_WORKER_CONCURRENCY: _c, ...defaults } = env;
  const slots = loadConfig(defaults).workerConcurrency;
  const own = await startOwnPg(logger);
  try {
    const toolrun = await measureToolrunCpu(own, env, s, logger);
    const graphile = await measureGraphileCpu(own, slots, s);
    return { settings: { ...s, slots }, toolrun, graphile };
  } finally {
    await own.stop();
  }
}

const short = (q: string) => (q.length > 150 ? `${q.slice(0, 147)}...` : q);

export function cpuLines(r: CpuResult): string[] {
  const t = r.toolrun;
  const g = r.graphile;
  const row = (x: CpuSide) => [
    x.label, fmt(x.serviceMs, 2), fmt(x.pgMs, 2), fmt(x.statementsPerRun, 1), fmt(x.transactionsPerRun, 1), fmt(x.runsPerS, 0), fmt(x.startsPerS, 0), fmt(x.startP99Ms, 0),
  ];
  return [
    `CPU per run, a job with no work: ${r.settings.runs} runs over ${r.settings.teams} teams, ${r.settings.inFlight} starts in flight, ${r.settings.slots} worker slot(s) (the default here), ` +
      "on the benchmark's own PostgreSQL (all its backends are the runs')",
    table(
      ['side', 'service CPU ms/run', 'PostgreSQL CPU ms/run', 'statements/run', 'transactions/run', 'runs/s', 'starts/s', 'start p99 ms'],
      [row(g), row(t), ['Toolrun / graphile-worker', `${fmt(t.serviceMs / g.serviceMs, 1)}x`, `${fmt(t.pgMs / g.pgMs, 1)}x`, `${fmt(t.statementsPerRun / g.statementsPerRun, 1)}x`, '', `${fmt(t.runsPerS / g.runsPerS, 2)}x`, '', '']],
    ),
    `targets: service <= ${SERVICE_TARGET_MS} ms, PostgreSQL <= ${PG_TARGET_MS} ms per run; Toolrun's service = the API process with its in-process workers (serve), ` +
      "the HTTP client not counted; graphile-worker's = this process (runner + addJob client). " +
      `PostgreSQL's = every process of the server, less the backend of the benchmark's own LISTEN connection (${WATCHER_APPLICATION}, below).`,
    ...[g, t].map((x) => `${x.label}: PostgreSQL ms/run by process: ${Object.entries(x.pgMsByRole).map(([role, ms]) => `${role} ${fmt(ms, 2)}`).join(', ')}`),
    ...[g, t].map((x) => `${x.label}: live backends' ms/run by application_name: ${Object.entries(x.pgMsByApplication).filter(([, ms]) => ms >= 0.005).sort((a, b) => b[1] - a[1]).map(([name, ms]) => `${name} ${fmt(ms, 2)}`).join(', ')}`),
    `Toolrun's statements per run (pg_stat_statements, BEGIN/COMMIT included): calls, backend ms (planning + execution, lock waits included), text:`,
    ...t.statements.map((st) => `  ${fmt(st.perRun, 2)}  ${fmt(st.msPerRun, 3)}  ${short(st.query)}`),
    `graphile-worker's statements per job:`,
    ...g.statements.map((st) => `  ${fmt(st.perRun, 2)}  ${fmt(st.msPerRun, 3)}  ${short(st.query)}`),
  ];
}

export function cpuFigures(r: CpuResult): Figure[] {
  const t = r.toolrun;
  const g = r.graphile;
  return [
    figure({ name: 'cpu_service_per_run', figure: `service CPU per ${t.label} run (API + in-process workers), default slots`, unit: 'ms',
      value: t.serviceMs, baseline: { label: 'graphile-worker no-op job, its process (runner + client)', value: g.serviceMs },
      target: { on: 'value', op: '<=', limit: SERVICE_TARGET_MS }, note: `${fmt(t.runsPerS, 0)} runs/s (graphile-worker ${fmt(g.runsPerS, 0)}/s)` }),
    figure({ name: 'cpu_pg_per_run', figure: `PostgreSQL CPU per ${t.label} run, default slots`, unit: 'ms',
      value: t.pgMs, baseline: { label: 'graphile-worker no-op job on the same server', value: g.pgMs },
      target: { on: 'value', op: '<=', limit: PG_TARGET_MS },
      note: `${fmt(t.statementsPerRun, 1)} statements and ${fmt(t.transactionsPerRun, 1)} transactions per run (graphile-worker ${fmt(g.statementsPerRun, 1)} and ${fmt(g.transactionsPerRun, 1)})` }),
  ];
}
