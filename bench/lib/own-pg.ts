/**
 * A PostgreSQL server of the benchmark's own (issue 37, CPU per run): every backend on it serves
 * this benchmark, so the CPU of its process tree is what the runs cost PostgreSQL, and
 * pg_stat_statements (preloaded here, which the machine's server may not do) counts the
 * statements. It is the embedded server (src/db/embedded.ts) started once to make the cluster,
 * then again with shared_preload_libraries set, which only a start can load.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { Logger } from 'pino';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../src/db/embedded.js';
import { processTree, procCpu } from './app-children.js';

export interface OwnPg {
  /** A superuser URL to the server's `postgres` database. */
  adminUrl: string;
  /**
   * CPU seconds of the whole server (the postmaster, its live processes and every reaped backend)
   * by role (PG_ROLES), from each live process's title; reaped processes apart. Their sum is the
   * server's total.
   */
  cpuByRole(): Record<PgRole, number>;
  /** A URL to `database` on this server. */
  urlOf(database: string): string;
  stop(): Promise<void>;
}

/**
 * Where a server's CPU goes. Reaped: processes that ended (autovacuum workers, backends of closed
 * connections), whose time is in the postmaster's cutime/cstime and can no longer be told apart.
 */
export const PG_ROLES = ['client backends', 'autovacuum', 'WAL writer', 'checkpointer + bgwriter', 'other live', 'reaped'] as const;
export type PgRole = (typeof PG_ROLES)[number];

function roleOf(title: string): PgRole {
  if (/autovacuum/.test(title)) return 'autovacuum';
  if (/walwriter/.test(title)) return 'WAL writer';
  if (/checkpointer|background writer/.test(title)) return 'checkpointer + bgwriter';
  // A backend's title: "postgres: <user> <database> <host>(<port>) <state>".
  if (/\(\d+\)|\[local\]/.test(title)) return 'client backends';
  return 'other live';
}

function cpuByRole(pmPid: number): Record<PgRole, number> {
  const out = Object.fromEntries(PG_ROLES.map((r) => [r, 0])) as Record<PgRole, number>;
  for (const pid of processTree(pmPid)) {
    const { own, reaped } = procCpu(pid);
    out.reaped += reaped;
    if (pid === pmPid) {
      out['other live'] += own;
      continue;
    }
    let title = '';
    try {
      title = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
    } catch {
      // ended meanwhile: its time is in reaped at the next reading
    }
    out[roleOf(title)] += own;
  }
  return out;
}

/**
 * CPU seconds of the server's live processes by application_name (backend_type where none is
 * set): which of the service's pools and listeners the server spends its time on.
 */
export async function cpuByApplication(adminUrl: string): Promise<Record<string, number>> {
  const rows = await adminQuery<{ pid: number; name: string }>(
    adminUrl,
    "SELECT pid, coalesce(nullif(application_name, ''), backend_type) AS name FROM pg_stat_activity",
  );
  const out: Record<string, number> = {};
  for (const { pid, name } of rows) out[name] = (out[name] ?? 0) + procCpu(pid).own;
  return out;
}

export function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

export async function adminQuery<R extends pg.QueryResultRow = pg.QueryResultRow>(url: string, sql: string, values: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(sql, values)).rows;
  } finally {
    await client.end();
  }
}

export async function startOwnPg(logger: Logger): Promise<OwnPg> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-bench-cpu-'));
  fs.chmodSync(dir, 0o755); // as root, postgres runs as an unprivileged user that must reach it
  let server: EmbeddedPostgres | null = null;
  try {
    server = await startEmbeddedPostgres({ dataDir: dir, logger });
    const first = withDatabase(server.connectionString, 'postgres');
    await adminQuery(first, "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'");
    await adminQuery(first, "ALTER SYSTEM SET pg_stat_statements.max = '10000'");
    await adminQuery(first, "ALTER SYSTEM SET pg_stat_statements.track_planning = 'on'");
    await server.stop();
    server = await startEmbeddedPostgres({ dataDir: dir, logger });
  } catch (err) {
    await server?.stop().catch(() => undefined);
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const running = server;
  const adminUrl = withDatabase(running.connectionString, 'postgres');
  // Its view, in the database the benchmark reads it from, counts every database's statements.
  await adminQuery(adminUrl, 'CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  const pmPid = Number(fs.readFileSync(path.join(dir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
  if (!Number.isInteger(pmPid) || pmPid <= 0) throw new Error('own PostgreSQL: no postmaster pid');
  return {
    adminUrl,
    cpuByRole: () => cpuByRole(pmPid),
    urlOf: (database) => withDatabase(running.connectionString, database),
    async stop() {
      await running.stop().catch(() => undefined);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface StatementCount {
  query: string;
  calls: number;
  /** Planning and execution time of all its calls, ms (wall time in the backend: lock waits included). */
  totalMs: number;
}

/** Forgets what pg_stat_statements counted so far, on the whole server. */
export async function resetStatements(url: string): Promise<void> {
  await adminQuery(url, 'SELECT pg_stat_statements_reset()');
}

/** The statements run in `database` since the last reset, most called first (BEGIN/COMMIT included). */
export async function statementsOf(url: string, database: string): Promise<StatementCount[]> {
  const rows = await adminQuery<{ query: string; calls: string; total_ms: number }>(
    url,
    `SELECT s.query, s.calls::text, s.total_plan_time + s.total_exec_time AS total_ms FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
      WHERE d.datname = $1::text ORDER BY s.calls DESC, s.query`,
    [database],
  );
  return rows.map((r) => ({ query: r.query.replace(/\s+/g, ' ').trim(), calls: Number(r.calls), totalMs: r.total_ms }));
}

/** Commits and rollbacks in `database` as the statistics collector has them now. */
export async function transactionsOf(url: string, database: string): Promise<number> {
  const rows = await adminQuery<{ n: string }>(
    url,
    'SELECT (xact_commit + xact_rollback)::text AS n FROM pg_stat_database WHERE datname = $1::text',
    [database],
  );
  return Number(rows[0]?.n ?? 0);
}
