// Shared helpers for the run-engine tests (test/runs-engine.test.ts, test/runs-crash.test.ts):
// an API client per team, run starts, reads of the run, ledger and outbox rows straight from
// PostgreSQL, and in-process workers configured like a separate worker would be.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, afterEach, before, describe } from 'node:test';
import type { Config } from '../../src/config/config.js';
import { loadConfig } from '../../src/config/config.js';
import type { Db, Queryable } from '../../src/db/pool.js';
import { testLogger } from './test-logs.js';
import { resolveMediaBinaries } from '../../src/media/binaries.js';
import { lockRun } from '../../src/runs/repository.js';
import { ledgerDrift } from '../../src/sparks/ledger.js';
import { cancelLockedRun } from '../../src/runs/transitions.js';
import { RunWorker } from '../../src/runs/worker.js';
import type { ToolRegistry } from '../../src/tools/registry.js';
import type { LogSink } from './app.js';
import { bearer, makeTeam, type TeamFixture } from './fixtures.js';
import { makePng } from './media.js';
import { startTestServer, type TestServer } from './server.js';
import { testRegistry } from './test-tools.js';

export const FINAL = ['succeeded', 'failed', 'canceled'];

export interface RunBody {
  id: string;
  status: string;
  cost_sparks: number;
  progress: number;
  outputs: { asset_id: string; width: number; height: number; size_bytes: number; mime_type: string; file_name: string }[];
  error: string | null;
  started_at: string | null;
  finished_at: string | null;
}

/** A run as the database holds it, with the engine's bookkeeping columns. */
export interface RunState {
  id: string;
  status: string;
  attempts: number;
  max_attempts: number;
  lease_owner: string | null;
  lease_expires_at: Date | null;
  progress: number;
  price_sparks: number;
  cost_sparks: number;
  error: string | null;
}

/** One team with a key, an uploaded 640x480 PNG and a small API client. */
export class TeamClient {
  fileId = '';
  constructor(
    readonly s: TestServer,
    readonly team: TeamFixture,
  ) {}

  static async create(s: TestServer, sparks = 100_000): Promise<TeamClient> {
    const c = new TeamClient(s, await makeTeam(s.database.db, { sparks, rate: 300 }));
    c.fileId = await c.uploadPng();
    return c;
  }

  api(method: string, url: string, body?: unknown): Promise<Response> {
    return fetch(`${this.s.url}${url}`, {
      method,
      headers: { ...bearer(this.team.key), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  }

  private async uploadPng(): Promise<string> {
    const png = await makePng(640, 480);
    const res = await this.api('POST', '/v1/files/upload-url', { file_name: 'a.png', mime_type: 'image/png', size_bytes: png.length });
    assert.equal(res.status, 201);
    const up = (await res.json()) as { file_id: string; upload_id: string; parts: { part_number: number; url: string }[]; part_size_bytes: number };
    const parts = [];
    for (const p of up.parts) {
      const chunk = png.subarray((p.part_number - 1) * up.part_size_bytes, p.part_number * up.part_size_bytes);
      const r = await fetch(p.url, { method: 'PUT', body: Uint8Array.from(chunk) });
      parts.push({ part_number: p.part_number, etag: r.headers.get('etag') ?? '' });
    }
    const done = await this.api('POST', `/v1/files/${up.file_id}/complete`, { upload_id: up.upload_id, parts });
    assert.equal(((await done.json()) as { status: string }).status, 'ready');
    return up.file_id;
  }

  /** Starts a test_copy run in the given mode; 202 or the test fails. */
  async start(mode: string, extra: Record<string, unknown> = {}): Promise<RunBody> {
    const res = await this.api('POST', '/v1/tools/test_copy/runs', { inputs: { image: [this.fileId], mode, ...extra } });
    assert.equal(res.status, 202, await res.clone().text());
    return (await res.json()) as RunBody;
  }

  async get(runId: string): Promise<RunBody> {
    const res = await this.api('GET', `/v1/runs/${runId}`);
    assert.equal(res.status, 200);
    return (await res.json()) as RunBody;
  }

  /** Where the run's stored outputs live on the local backend. */
  outputsDir(runId: string): string {
    return path.join(this.s.config.dataDir, 'storage', 'objects', 'outputs', this.team.teamId, runId);
  }

  /** Objects left under the run's output prefix (none once a run that did not succeed is cleaned up). */
  storedObjects(runId: string): string[] {
    const dir = this.outputsDir(runId);
    return fs.existsSync(dir) ? fs.readdirSync(dir) : [];
  }
}

export async function runState(db: Queryable, runId: string): Promise<RunState> {
  const { rows } = await db.query<RunState>(
    `SELECT id, status, attempts, max_attempts, lease_owner, lease_expires_at, progress, price_sparks, cost_sparks, error
       FROM runs WHERE id = $1::uuid`,
    [runId],
  );
  const row = rows[0];
  assert.ok(row, `run ${runId} exists`);
  return row;
}

/** Polls the database until the run is final (deadline in ms). */
export async function waitFinal(db: Queryable, runId: string, timeoutMs = 20_000): Promise<RunState> {
  return waitFor(`run ${runId} to reach a final state`, async () => {
    const r = await runState(db, runId);
    return FINAL.includes(r.status) ? r : undefined;
  }, timeoutMs);
}

/** How many ledger rows of each kind the run has, e.g. { hold: 1, release: 1, charge: 1 }. */
export async function ledgerKinds(db: Queryable, runId: string): Promise<Record<string, number>> {
  const { rows } = await db.query<{ kind: string; n: number }>(
    `SELECT kind, count(*)::integer AS n FROM ledger_entries WHERE run_id = $1::uuid GROUP BY kind ORDER BY kind`,
    [runId],
  );
  return Object.fromEntries(rows.map((r) => [r.kind, r.n]));
}

/** The outbox rows of one run, by type. */
export async function eventTypes(db: Queryable, runId: string): Promise<string[]> {
  const { rows } = await db.query<{ type: string }>(`SELECT type FROM run_events WHERE run_id = $1::uuid ORDER BY created_at`, [runId]);
  return rows.map((r) => r.type);
}

/** Ledger and outbox as a settled run of this status must leave them. */
export async function assertSettledOnce(db: Queryable, run: RunState): Promise<void> {
  const expected = run.status === 'succeeded' ? { charge: 1, hold: 1, release: 1 } : { hold: 1, release: 1 };
  assert.deepEqual(await ledgerKinds(db, run.id), expected, `ledger rows of ${run.status} run ${run.id}`);
  assert.deepEqual(await eventTypes(db, run.id), [`run.${run.status}`], `events of run ${run.id}`);
  assert.equal(run.cost_sparks, run.status === 'succeeded' ? run.price_sparks : 0, `cost of ${run.status} run ${run.id}`);
  assert.equal(run.lease_owner, null);
}

/** The working directories executions of this run have now (one per execution in this machine). */
export function workDirs(runId: string): string[] {
  return fs.readdirSync(os.tmpdir()).filter((d) => d.startsWith(`toolrun-run-${runId}-`));
}

/** Polls until check() returns a value (not undefined), or fails after the deadline. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 20_000, intervalMs = 25): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Configuration for a worker sharing the server's database and data directory, with env overrides. */
export function workerConfig(s: TestServer, env: Record<string, string> = {}): Config {
  return loadConfig({
    TOOLRUN_ENV: 'test',
    TOOLRUN_DATA_DIR: s.config.dataDir,
    PUBLIC_BASE_URL: s.url,
    TOOLRUN_LEASE_SECONDS: String(s.config.runs.leaseSeconds),
    TOOLRUN_WORKER_POLL_MS: String(s.config.runs.pollMs),
    TOOLRUN_RUN_TIMEOUT_SECONDS: String(s.config.runs.timeoutSeconds),
    ...env,
  });
}

/** In-process workers a test started; stopped (and their unfinished runs canceled) after it. */
export class WorkerSet {
  private readonly workers: RunWorker[] = [];
  constructor(
    private readonly s: TestServer,
    private readonly tools: ToolRegistry,
    private readonly logs?: LogSink,
  ) {}

  /** `db`: the pool the worker works through (the server's own when not given); it LISTENs directly. */
  async start(opts: { concurrency?: number; env?: Record<string, string>; db?: Db } = {}): Promise<RunWorker> {
    const worker = new RunWorker({
      config: workerConfig(this.s, opts.env),
      db: opts.db ?? this.s.database.db,
      storage: this.s.storage,
      tools: this.tools,
      media: resolveMediaBinaries(),
      logger: testLogger(this.logs ? 'info' : 'silent', this.logs),
      concurrency: opts.concurrency ?? 2,
    });
    this.workers.push(worker);
    await worker.start();
    return worker;
  }

  /** Stops every worker (without waiting for hung tools) and cancels runs a test left unfinished. */
  async stopAll(): Promise<void> {
    const ws = this.workers.splice(0);
    await Promise.all(ws.map((w) => w.stop(0)));
    await cancelUnfinished(this.s.database.db);
  }
}

/** Settles every queued or running run as canceled, so one test's leftovers never reach the next. */
export async function cancelUnfinished(db: { pool: Queryable; tx<T>(fn: (c: Queryable) => Promise<T>): Promise<T> }): Promise<void> {
  const { rows } = await db.pool.query<{ id: string }>(`SELECT id FROM runs WHERE status IN ('queued', 'running')`);
  for (const { id } of rows) {
    await db.tx(async (tx) => {
      const run = await lockRun(tx, id);
      if (run) await cancelLockedRun(tx, run);
    });
  }
}

/** A small seeded generator, so a failing random schedule can be replayed from its seed. */
export function seededRandom(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 2 ** 32;
  };
}

export interface LogLine {
  msg?: string;
  run_id?: string;
  reason?: string;
  attempt?: number;
  [k: string]: unknown;
}

/** JSON log lines collected in a sink or a child's output. */
export function parseLogLines(text: string): LogLine[] {
  const out: LogLine[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      out.push(JSON.parse(line) as LogLine);
    } catch {
      // a line still being written
    }
  }
  return out;
}

/** The "run stopped" log line of one execution (run, attempt) with its reason, if it was written. */
export function stoppedLine(text: string, runId: string, attempt: number): LogLine | undefined {
  return parseLogLines(text).find((l) => l.msg === 'run stopped' && l.run_id === runId && l.attempt === attempt);
}

/** One server (own database, own data directory) and the in-process workers of its tests. */
export class Engine {
  s!: TestServer;
  workers!: WorkerSet;
  readonly tools = testRegistry();

  db(): Queryable {
    return this.s.database.db.pool;
  }
}

/**
 * A suite on its own server, so that suites may run side by side (their workers never see each
 * other's runs) while the tests inside one run one after another. After each test its workers are
 * stopped, its unfinished runs canceled, and every team must balance.
 */
export function engineSuite(name: string, body: (e: Engine) => void, hooks: { afterEach?: () => Promise<void>; after?: () => Promise<void> } = {}): Engine {
  const e = new Engine();
  describe(name, { concurrency: 1 }, () => {
    before(async () => {
      e.s = await startTestServer({ tools: e.tools, env: { TOOLRUN_LEASE_SECONDS: '3', TOOLRUN_WORKER_POLL_MS: '200' } });
      e.workers = new WorkerSet(e.s, e.tools, e.s.logs);
    });
    afterEach(async () => {
      await hooks.afterEach?.();
      await e.workers.stopAll();
      assert.deepEqual(await ledgerDrift(e.db()), [], 'every team balances after the test');
    });
    after(async () => {
      await hooks.after?.();
      await e.workers?.stopAll();
      await e.s?.close();
    });
    body(e);
  });
  return e;
}
