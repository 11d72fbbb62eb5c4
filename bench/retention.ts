/**
 * `npm run bench:retention`: a week of retention in a couple of minutes (issue 37). Not a test.
 *
 * In a dedicated database, BENCH_RETENTION_RUNS_PER_DAY final runs a day leave what real traffic
 * leaves (bench/lib/retention-rows.ts: the run, its event, delivery and attempt, an expired output
 * and input file row, two ledger rows). The tables are first filled with what the default periods
 * keep (events, deliveries, attempts of 30 days, dated 37 to 7 days ago; output and file rows of
 * the last 7 of those days), then vacuumed (nothing is past its period yet): the start, a steady
 * state of live rows only. Then 7 simulated days: every simulated
 * hour an hour's traffic is written (dated that many hours ago) and the janitor passes with its
 * clock set back as far (src/retention/janitor.ts, lagSeconds), deleting an hour's worth of each
 * kind with the default periods. Autovacuum is off on the tables and emulated deterministically:
 * after each pass, a table whose dead rows (deleted and updated since its last vacuum, counted by
 * the bench) exceed autovacuum's trigger (50 + scale factor x rows) gets a plain VACUUM, as
 * autovacuum would within a minute (its naptime), far inside a simulated hour. Run twice: with
 * PostgreSQL's default scale factor (0.2) and with the tables' own settings (migration 0023).
 *
 * Figures: each table's size (heap, indexes, TOAST) at the end against its size at the start
 * (the baseline): the tables must not grow, since the rows they hold do not; and the longest
 * janitor batch (one statement: the longest any row is locked) and the longest pass.
 *
 * Environment: DATABASE_URL (else an embedded PostgreSQL), BENCH_RETENTION_RUNS_PER_DAY (2000),
 * BENCH_RETENTION_DAYS (7), BENCH_LOG_LEVEL (warn).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createLogger } from '../src/logger.js';
import type { RetentionConfig } from '../src/config/retention.js';
import { retentionSteps } from '../src/retention/janitor.js';
import { writeSection } from './lib/doc-section.js';
import { setupBenchDatabase } from './lib/db.js';
import { makeEndpoint, writeTraffic, type RetentionOwner } from './lib/retention-rows.js';
import { envInt, figure, finish, fmt, loadNote, median, resultHeader, runBench, sleep, table, watchdog, type BenchResult, type Figure } from './lib/report.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const settings = {
  runsPerDay: envInt('BENCH_RETENTION_RUNS_PER_DAY', 2000, 24),
  days: envInt('BENCH_RETENTION_DAYS', 7, 1),
  prefillDays: 30,
  prefillChunkHours: 4,
};
const TABLES = ['run_events', 'webhook_deliveries', 'webhook_attempts', 'run_outputs', 'files'] as const;
type Table = (typeof TABLES)[number];
/** The end may exceed the start by this much: a vacuum's free space not yet reused, a page or two of index. */
const GROWTH_LIMIT = 1.25;
/** In the second half the tables must have stopped growing: the rows they hold do not change. */
const LATE_GROWTH_LIMIT = 1.05;
const CONFIG: RetentionConfig = { runEventsDays: 30, webhookDays: 30, expiredRowsDays: 7, batchSize: 1000 };
const logger = createLogger(process.env.BENCH_LOG_LEVEL || 'warn');

interface Soak {
  variant: string;
  start: Record<Table, number>;
  /** After half the simulated days: the end against it says whether the tables still grow. */
  mid: Record<Table, number>;
  end: Record<Table, number>;
  rowsStart: Record<Table, number>;
  rowsEnd: Record<Table, number>;
  vacuums: Record<Table, number>;
  deleted: Record<Table, number>;
  batchMs: number[];
  passMs: number[];
  scaleFactors: Record<Table, number>;
}

async function sizes(pool: pg.Pool): Promise<{ bytes: Record<Table, number>; rows: Record<Table, number> }> {
  const bytes = {} as Record<Table, number>;
  const rows = {} as Record<Table, number>;
  for (const t of TABLES) {
    const r = await pool.query<{ b: string; n: string }>(`SELECT pg_total_relation_size($1::regclass)::text AS b, (SELECT count(*) FROM ${t})::text AS n`, [t]);
    bytes[t] = Number(r.rows[0]!.b);
    rows[t] = Number(r.rows[0]!.n);
  }
  return { bytes, rows };
}

/** Each table's autovacuum_vacuum_scale_factor: its own setting, else the server's. */
async function scaleFactors(pool: pg.Pool): Promise<Record<Table, number>> {
  const server = Number((await pool.query<{ v: string }>(`SELECT current_setting('autovacuum_vacuum_scale_factor') AS v`)).rows[0]!.v);
  const out = {} as Record<Table, number>;
  for (const t of TABLES) {
    const { rows } = await pool.query<{ o: string[] | null }>('SELECT reloptions AS o FROM pg_class WHERE oid = $1::regclass', [t]);
    const own = (rows[0]?.o ?? []).find((o) => o.startsWith('autovacuum_vacuum_scale_factor='));
    out[t] = own ? Number(own.split('=')[1]) : server;
  }
  return out;
}

async function soak(variant: 'postgres-defaults' | 'migration-0023'): Promise<Soak> {
  const bench = await setupBenchDatabase(logger);
  const pool = new pg.Pool({ connectionString: bench.url, max: 2 });
  try {
    if (variant === 'postgres-defaults') for (const t of TABLES) await pool.query(`ALTER TABLE ${t} RESET (autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold)`);
    const factors = await scaleFactors(pool);
    // Autovacuum is emulated below, so that each run of the bench vacuums at the same moments; it
    // is off on every table of the database, since an ANALYZE it ran on another table would hold
    // a snapshot that keeps deleted rows from being removed.
    const { rows: all } = await pool.query<{ t: string }>(`SELECT quote_ident(relname) AS t FROM pg_class WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace`);
    for (const { t } of all) await pool.query(`ALTER TABLE ${t} SET (autovacuum_enabled = false)`);
    const { rows } = await pool.query<{ team_id: string; member_id: string }>('SELECT team_id, member_id FROM api_keys WHERE id = $1::uuid', [bench.keyId]);
    const owner: RetentionOwner = { teamId: rows[0]!.team_id, memberId: rows[0]!.member_id, keyId: bench.keyId, endpointId: '' };
    owner.endpointId = await makeEndpoint(pool, owner.teamId);
    const simHours = settings.days * 24;
    const perChunk = Math.round((settings.runsPerDay * settings.prefillChunkHours) / 24);
    // Output and file rows only for the days they are kept (7): the start then holds no row past
    // its period, nothing is deleted before it, and its size is that of live rows alone.
    const expiredRowsHours = simHours + CONFIG.expiredRowsDays * 24;
    // An hour short of each period at the oldest, so that none is past it by the first pass.
    for (let h = simHours + settings.prefillDays * 24 - 1; h > simHours; h -= settings.prefillChunkHours) {
      await writeTraffic(pool, owner, perChunk, h, h < expiredRowsHours);
    }
    const early = await pass(pool, simHours * 3600);
    if (Object.values(early).some((n) => n > 0)) throw new Error(`the start held rows past their period: ${JSON.stringify(early)}`);
    await noAutovacuum(pool);
    for (const t of TABLES) await pool.query(`VACUUM (ANALYZE) ${t}`);
    const start = await sizes(pool);
    const dead = Object.fromEntries(TABLES.map((t) => [t, 0])) as Record<Table, number>;
    const vacuums = { ...dead };
    const deleted = { ...dead };
    const batchMs: number[] = [];
    const passMs: number[] = [];
    const perHour = Math.round(settings.runsPerDay / 24);
    let mid = start.bytes;
    for (let hour = 1; hour <= simHours; hour++) {
      const ago = simHours - hour;
      await writeTraffic(pool, owner, perHour, ago);
      // The traffic's delivery is written pending, then ended: one dead version each.
      dead.webhook_deliveries += perHour;
      const t0 = performance.now();
      const got = await pass(pool, ago * 3600, batchMs);
      passMs.push(performance.now() - t0);
      for (const t of TABLES) {
        deleted[t] += got[t] ?? 0;
        dead[t] += got[t] ?? 0;
        const { rows: c } = await pool.query<{ n: number }>('SELECT greatest(reltuples, 0)::float8 AS n FROM pg_class WHERE oid = $1::regclass', [t]);
        if (dead[t] > 50 + factors[t] * (c[0]?.n ?? 0)) {
          await pool.query(`VACUUM (ANALYZE) ${t}`);
          vacuums[t]++;
          dead[t] = 0;
        }
      }
      if (hour === Math.floor(settings.days / 2) * 24) mid = (await sizes(pool)).bytes;
    }
    const end = await sizes(pool);
    return { variant, start: start.bytes, mid, end: end.bytes, rowsStart: start.rows, rowsEnd: end.rows, vacuums, deleted, batchMs, passMs, scaleFactors: factors };
  } finally {
    await pool.end();
    await bench.teardown();
  }
}

/** Waits until no autovacuum worker runs in this database (one may have started before it was turned off). */
async function noAutovacuum(pool: pg.Pool): Promise<void> {
  for (;;) {
    const { rowCount } = await pool.query(`SELECT 1 FROM pg_stat_activity WHERE backend_type = 'autovacuum worker' AND datname = current_database()`);
    if (!rowCount) return;
    await sleep(200);
  }
}

/** One janitor pass as the service makes it (its steps, a batch at a time), timing each batch. */
async function pass(pool: pg.Pool, lagSeconds: number, batchMs: number[] = []): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const step of retentionSteps(CONFIG, lagSeconds)) {
    let total = 0;
    for (;;) {
      const t0 = performance.now();
      const n = await step.batch(pool, CONFIG.batchSize);
      batchMs.push(performance.now() - t0);
      total += n;
      if (n < CONFIG.batchSize) break;
    }
    out[step.name] = total;
  }
  return out;
}

const kib = (b: number) => `${fmt(b / 1024, 0)} KiB`;

async function main(): Promise<void> {
  const loadBefore = loadNote();
  // The bench databases are dropped by each soak's own clean-up; past the limit the process just ends.
  watchdog('retention', async () => undefined, 20);
  const soaks = [await soak('postgres-defaults'), await soak('migration-0023')];
  const loadAfter = loadNote();
  const figures: Figure[] = [];
  const notes: string[] = [];
  for (const s of soaks) {
    const total = (r: Record<Table, number>) => TABLES.reduce((a, t) => a + r[t], 0);
    figures.push(
      figure({
        name: `size_${s.variant.replace(/\W+/g, '_')}`,
        figure: `size of the five tables after ${settings.days} simulated days (${s.variant}, scale factors ${[...new Set(Object.values(s.scaleFactors))].join('/')})`,
        unit: 'KiB',
        value: total(s.end) / 1024,
        baseline: { label: 'at the start (steady state)', value: total(s.start) / 1024 },
        target: { on: 'ratio', op: '<=', limit: GROWTH_LIMIT },
      }),
      figure({
        name: `late_growth_${s.variant.replace(/\W+/g, '_')}`,
        figure: `size of the five tables at the end (${s.variant}), against after ${Math.floor(settings.days / 2)} simulated days`,
        unit: 'KiB',
        value: total(s.end) / 1024,
        baseline: { label: `after ${Math.floor(settings.days / 2)} days`, value: total(s.mid) / 1024 },
        ...(s.variant === 'migration-0023' ? { target: { on: 'ratio' as const, op: '<=' as const, limit: LATE_GROWTH_LIMIT } } : {}),
      }),
    );
    notes.push(
      `${s.variant}, per table (sizes at the start, after half the days and at the end; rows; rows deleted; vacuums):\n\n\`\`\`text\n` +
        table(
          ['table', 'start', 'mid', 'end', 'end/start', 'rows start', 'rows end', 'deleted', 'vacuums'],
          TABLES.map((t) => [t, kib(s.start[t]), kib(s.mid[t]), kib(s.end[t]), fmt(s.end[t] / s.start[t], 2), String(s.rowsStart[t]), String(s.rowsEnd[t]), String(s.deleted[t]), String(s.vacuums[t])]),
        ) +
        '\n```',
    );
  }
  const chosen = soaks[1]!;
  figures.push(
    figure({
      name: 'longest_batch',
      figure: 'longest janitor batch (one DELETE statement: the longest a row lock is held)',
      unit: 'ms',
      value: Math.max(...chosen.batchMs),
      note: `median ${fmt(median(chosen.batchMs), 2)} ms over ${chosen.batchMs.length} batches`,
    }),
    figure({ name: 'longest_pass', figure: 'longest janitor pass (an hour of traffic to delete, every table)', unit: 'ms', value: Math.max(...chosen.passMs), note: `median ${fmt(median(chosen.passMs), 1)} ms` }),
  );
  const result: BenchResult = {
    ...resultHeader('retention', `retention: table sizes over ${settings.days} simulated days of inserts and janitor passes`,
      { before: loadBefore, after: loadAfter }, { server: process.env.DATABASE_URL ? 'DATABASE_URL' : 'embedded PostgreSQL (temp dir)', version: null }, settings),
    figures,
    charts: [],
    notes: [
      `${settings.runsPerDay} runs a day; each leaves a run, an event, a delivery, an attempt, an expired output row, an expired file row and two ledger rows. Default periods: events, deliveries and attempts 30 days, expired rows 7 days.`,
      'Start: the rows the periods keep (30 days of events, deliveries and attempts; 7 of output and file rows), vacuumed. Then every simulated hour: an hour of traffic, a janitor pass, and the vacuum autovacuum would make (emulated from its trigger: 50 + scale factor x rows dead).',
      ...notes,
    ],
    details: soaks.map((s) => ({ ...s, batchMs: undefined, passMs: undefined })),
  };
  writeSection(path.join(ROOT, 'docs', 'benchmarks.md'), 'retention', 'a simulated week of deletes and inserts: table sizes and janitor batches (issue 37)', result, 'bench/retention.ts');
  finish(result);
}

runBench('retention', main);
