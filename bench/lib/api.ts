/**
 * The API as a client sees it (bearer key, JSON, file uploads in parts, runs) and the
 * database as the benchmarks read it (run timestamps, to the microsecond, in SQL).
 */
import http from 'node:http';
import pg from 'pg';
import type { Logger } from 'pino';
import { createDb } from '../../src/db/pool.js';
import { EVENTS_CHANNEL } from '../../src/runs/transitions.js';
import { grantSparks, updateTeam } from '../../src/teams/repository.js';
import { putPart } from './upload-io.js';
import { sleep } from './report.js';

export interface RunJson {
  id: string;
  status: string;
  error: string | null;
  created_at: string | null;
  started_at: string | null;
  finished_at: string | null;
}

export class Api {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

  constructor(
    readonly base: string,
    readonly key: string,
  ) {}

  async call<T>(method: 'GET' | 'POST' | 'PATCH', path: string, body: unknown, expect: number): Promise<T> {
    const res = await fetch(`${this.base}${path}`, {
      method,
      headers: { authorization: `Bearer ${this.key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    if (res.status !== expect) throw new Error(`${method} ${path} answered ${res.status}: ${text.slice(0, 500)}`);
    return JSON.parse(text) as T;
  }

  startRun(tool: string, inputs: Record<string, unknown>): Promise<RunJson> {
    return this.call<RunJson>('POST', `/v1/tools/${tool}/runs`, { inputs }, 202);
  }

  getRun(id: string): Promise<RunJson> {
    return this.call<RunJson>('GET', `/v1/runs/${id}`, undefined, 200);
  }

  /** Uploads a file in the parts the API asks for and completes it; returns the ready file's id. */
  async upload(bytes: Buffer, fileName: string, mime: string): Promise<string> {
    const up = await this.call<{ file_id: string; upload_id: string; part_size_bytes: number; parts: { part_number: number; url: string }[] }>(
      'POST',
      '/v1/files/upload-url',
      { file_name: fileName, mime_type: mime, size_bytes: bytes.length },
      201,
    );
    const parts: { part_number: number; etag: string }[] = [];
    for (const p of up.parts) {
      const chunk = bytes.subarray((p.part_number - 1) * up.part_size_bytes, p.part_number * up.part_size_bytes);
      parts.push({ part_number: p.part_number, etag: await putPart(p.url, [chunk], this.agent) });
    }
    const done = await this.call<{ status: string }>('POST', `/v1/files/${up.file_id}/complete`, { upload_id: up.upload_id, parts }, 200);
    if (done.status !== 'ready') throw new Error(`upload of ${fileName} ended ${done.status}`);
    return up.file_id;
  }

  close(): void {
    this.agent.destroy();
  }
}

/**
 * Makes the bench team able to start thousands of runs in the throwaway database: a large grant,
 * a high hourly ceiling, and (for webhooks) the key's `webhooks` scope. Returns the team id.
 */
export async function prepareTeam(url: string, keyId: string, logger: Logger, opts: { scopes?: string[] } = {}): Promise<string> {
  const db = createDb({ connectionString: url, logger, max: 2, applicationName: 'toolrun-bench-setup' });
  try {
    const { rows } = await db.pool.query<{ team_id: string }>(
      'SELECT m.team_id FROM api_keys k JOIN members m ON m.id = k.member_id WHERE k.id = $1::uuid',
      [keyId],
    );
    const teamId = rows[0]?.team_id;
    if (!teamId) throw new Error('bench key has no team');
    await grantSparks(db, teamId, 100_000_000);
    await updateTeam(db.pool, teamId, { runsPerHour: 1_000_000 });
    if (opts.scopes) await db.pool.query('UPDATE api_keys SET scopes = $2::text[] WHERE id = $1::uuid', [keyId, opts.scopes]);
    return teamId;
  } finally {
    await db.close();
  }
}

/**
 * Learns that runs finished without asking the API: LISTENs on the channel the engine notifies in
 * every final transition (EVENTS_CHANNEL, payload = run id), so nothing polls the API while a job
 * runs. `wait` resolves with performance.now() of the notification (kept if it came first).
 */
export class RunNotifier {
  private readonly client: pg.Client;
  private readonly seen = new Map<string, number>();
  private readonly waiters = new Map<string, (at: number) => void>();
  private closing: Promise<void> | null = null;

  constructor(url: string) {
    this.client = new pg.Client({ connectionString: url, application_name: 'toolrun-bench-notify' });
    this.client.on('notification', (m) => {
      if (m.channel !== EVENTS_CHANNEL || !m.payload) return;
      const at = performance.now();
      const w = this.waiters.get(m.payload);
      if (w) w(at);
      else this.seen.set(m.payload, at);
    });
  }

  async start(): Promise<void> {
    await this.client.connect();
    await this.client.query(`LISTEN ${EVENTS_CHANNEL}`);
  }

  wait(runId: string, timeoutMs: number): Promise<number> {
    const early = this.seen.get(runId);
    if (early !== undefined) return Promise.resolve(early);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`run ${runId} not final after ${timeoutMs} ms`)), timeoutMs);
      this.waiters.set(runId, (at) => {
        clearTimeout(timer);
        this.waiters.delete(runId);
        resolve(at);
      });
    });
  }

  /** Ends the listening connection; later calls wait for the same end (a bench's clean-up may call it again). */
  close(): Promise<void> {
    return (this.closing ??= this.client.end());
  }
}

/** A run's timestamps as epoch milliseconds with microsecond fractions (PostgreSQL's clock). */
export interface RunTimes {
  id: string;
  status: string;
  created: number;
  started: number | null;
  finished: number | null;
}

export async function runTimes(pool: pg.Pool, ids: string[]): Promise<RunTimes[]> {
  const { rows } = await pool.query<RunTimes>(
    `SELECT id, status, extract(epoch FROM created_at) * 1000 AS created, extract(epoch FROM started_at) * 1000 AS started,
            extract(epoch FROM finished_at) * 1000 AS finished
       FROM runs WHERE id = ANY ($1::uuid[]) ORDER BY created_at`,
    [ids],
  );
  return rows.map((r) => ({ ...r, created: Number(r.created), started: r.started === null ? null : Number(r.started), finished: r.finished === null ? null : Number(r.finished) }));
}

/** Enqueue-to-start of each run (runs.started_at - created_at, both PostgreSQL now()), in ms. */
export const e2s = (rows: RunTimes[]) => rows.map((r) => (r.started ?? Number.NaN) - r.created);

/** Starts n runs of `tool` one after another, one every paceMs (or as fast as the API answers); their ids. */
export async function paced(api: Api, tool: string, n: number, paceMs: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    ids.push((await api.startRun(tool, {})).id);
    const wait = paceMs - (performance.now() - t0);
    if (wait > 0) await sleep(wait);
  }
  return ids;
}

/** Waits (polling the database, not the API) until every run is final; fails if one did not succeed. */
export async function waitFinal(pool: pg.Pool, ids: string[], timeoutMs: number): Promise<RunTimes[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await pool.query<{ n: number; bad: number }>(
      `SELECT count(*) FILTER (WHERE status IN ('succeeded', 'failed', 'canceled'))::integer AS n,
              count(*) FILTER (WHERE status IN ('failed', 'canceled'))::integer AS bad
         FROM runs WHERE id = ANY ($1::uuid[])`,
      [ids],
    );
    const { n = 0, bad = 0 } = rows[0] ?? {};
    if (bad) throw new Error(`${bad} of ${ids.length} runs did not succeed`);
    if (n === ids.length) return runTimes(pool, ids);
    if (Date.now() > deadline) throw new Error(`${ids.length - n} of ${ids.length} runs not final after ${timeoutMs} ms`);
    await sleep(100);
  }
}

/** Waits until the output check (verifyOutputs, after the run's commit) has settled the run's outputs. */
export async function outputsChecked(pool: pg.Pool, runId: string): Promise<void> {
  for (let i = 0; i < 1200; i++) {
    const { rows } = await pool.query<{ n: number }>("SELECT count(*)::integer AS n FROM run_outputs WHERE run_id = $1::uuid AND status = 'checking'", [runId]);
    if (!rows[0]?.n) return;
    await sleep(50);
  }
}

/** Floors from PostgreSQL alone: a NOTIFY round trip (pg_notify committed -> a LISTENing client) and a durable one-row UPDATE commit. */
export async function pgBaselines(url: string, n: number): Promise<{ notify: number[]; commit: number[] }> {
  const listener = new pg.Client({ connectionString: url });
  const sender = new pg.Client({ connectionString: url });
  await Promise.all([listener.connect(), sender.connect()]);
  try {
    await listener.query('LISTEN bench_rtt');
    await sender.query('CREATE TABLE bench_commit (id integer PRIMARY KEY, n integer NOT NULL); INSERT INTO bench_commit VALUES (1, 0)');
    const notify: number[] = [];
    const commit: number[] = [];
    for (let i = 0; i < n; i++) {
      const got = new Promise<void>((resolve) => listener.once('notification', () => resolve()));
      let t0 = performance.now();
      await sender.query("SELECT pg_notify('bench_rtt', $1::text)", [String(i)]);
      await got;
      notify.push(performance.now() - t0);
      t0 = performance.now();
      await sender.query('UPDATE bench_commit SET n = n + 1 WHERE id = 1');
      commit.push(performance.now() - t0);
    }
    return { notify, commit };
  } finally {
    await Promise.all([listener.end(), sender.end()]);
  }
}
