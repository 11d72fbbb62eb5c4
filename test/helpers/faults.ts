// Shared by the fault tests (test/faults-*.test.ts): real `toolrun worker` / `toolrun serve`
// processes, their child processes as /proc shows them, a brand site whose page can be held open,
// API calls over sockets by base URL, and the Sparks checks every fault must leave true.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Queryable } from '../../src/db/pool.js';
import { ledgerDrift } from '../../src/sparks/ledger.js';
import { callApi } from './fixtures.js';
import { CliProcess, cliEnv } from './process.js';
import { putPart, type Upload } from './uploads.js';

/** A JSON API call over a real socket; the body is parsed when there is one. */
export async function api<T = Record<string, unknown>>(
  baseUrl: string,
  key: string,
  method: string,
  url: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; body: T }> {
  const res = await callApi(baseUrl, key, method, url, body, headers, { timeoutMs: 60_000 });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : null) as T };
}

/** Uploads and completes a file through the three-step flow; asserts it is ready and returns its id. */
export async function uploadReadyFile(baseUrl: string, key: string, bytes: Buffer, name: string, mime: string): Promise<string> {
  const up = await api<Upload>(
    baseUrl,
    key,
    'POST',
    '/v1/files/upload-url',
    { file_name: name, mime_type: mime, size_bytes: bytes.length },
  );
  assert.equal(up.status, 201, JSON.stringify(up.body));
  const parts = [];
  for (const p of up.body.parts) parts.push({ part_number: p.part_number, etag: await putPart(up.body, bytes, p.part_number) });
  const done = await api<{ status: string }>(baseUrl, key, 'POST', `/v1/files/${up.body.file_id}/complete`, { upload_id: up.body.upload_id, parts });
  assert.equal(done.status, 200, JSON.stringify(done.body));
  assert.equal(done.body.status, 'ready', `${name} is ready`);
  return up.body.file_id;
}

/**
 * The team's Sparks after every run settled: the balance is grants minus charges plus refunds,
 * no hold is left open (each hold has its release), and the ledger sums to the kept balance.
 */
export async function assertTeamBalanced(db: Queryable, teamId: string): Promise<void> {
  const { rows } = await db.query<{ balance: number; grants: number; charges: number; refunds: number; holds: number; releases: number }>(
    `SELECT t.sparks_available::bigint AS balance,
            coalesce(sum(l.amount) FILTER (WHERE l.kind = 'grant'), 0)::bigint AS grants,
            coalesce(-sum(l.amount) FILTER (WHERE l.kind = 'charge'), 0)::bigint AS charges,
            coalesce(sum(l.amount) FILTER (WHERE l.kind = 'refund'), 0)::bigint AS refunds,
            count(*) FILTER (WHERE l.kind = 'hold')::integer AS holds,
            count(*) FILTER (WHERE l.kind = 'release')::integer AS releases
       FROM teams t LEFT JOIN ledger_entries l ON l.team_id = t.id
      WHERE t.id = $1::uuid GROUP BY t.id`,
    [teamId],
  );
  const row = rows[0];
  assert.ok(row, `team ${teamId} exists`);
  assert.equal(row.holds, row.releases, `every hold of team ${teamId} was released`);
  assert.equal(row.balance, row.grants - row.charges + row.refunds, `balance of team ${teamId} = grants - charges + refunds`);
  assert.deepEqual(await ledgerDrift(db), [], 'every team balances to the Spark');
}

export interface ProcInfo {
  pid: number;
  comm: string;
  state: string;
}

/** Live processes whose parent is ppid (Linux /proc); zombies are left out. */
export function childrenOf(ppid: number): ProcInfo[] {
  const out: ProcInfo[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid ...: comm may hold spaces, so split after the last ')'.
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const [state, parent] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(parent) === ppid && state !== 'Z') out.push({ pid: Number(entry), comm, state: state ?? '' });
    } catch {
      // the process ended while listing
    }
  }
  return out;
}

/** Environment of a `toolrun` child sharing a database and data directory with the test. */
export function toolrunEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  return cliEnv({ TOOLRUN_ENV: 'test', LOG_LEVEL: 'info', TOOLRUN_DEMO_SEED: '0', TOOLRUN_ALLOW_PRIVATE_NETWORK: '1', ...extra });
}

/** `toolrun worker` (the real tool registry) as a child process; resolves once its run worker listens. */
export async function startToolrunWorker(env: Record<string, string>): Promise<CliProcess> {
  const proc = new CliProcess(['worker'], toolrunEnv(env));
  await proc.waitForLog('run worker started', 90_000);
  return proc;
}

/** The worker id a `toolrun worker` logged ("host:pid:xxxx"); its lease tokens start with it. */
export function workerIdOf(proc: CliProcess): string {
  const line = proc.logs().find((l) => l.msg === 'run worker started');
  assert.ok(line && typeof line.worker === 'string', 'the worker logged its id');
  return line.worker;
}

/**
 * A tiny brand site on loopback. While `holding` is set, page requests are held open (never
 * answered) until release(), so a brand_kit_extract run can be caught mid-fetch; every request
 * is recorded.
 */
export class HoldSite {
  readonly requests: string[] = [];
  holding = false;
  private readonly held: http.ServerResponse[] = [];
  private readonly server = http.createServer((req, res) => this.handle(req.url ?? '/', res));
  private port = 0;

  get url(): string {
    return `http://127.0.0.1:${this.port}/`;
  }

  /** Page requests now held open. */
  get waiting(): number {
    return this.held.filter((r) => !r.writableEnded && !r.destroyed).length;
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  private handle(url: string, res: http.ServerResponse): void {
    const p = new URL(url, 'http://x').pathname;
    this.requests.push(p);
    if (p === '/') {
      if (this.holding) {
        this.held.push(res);
        return;
      }
      this.page(res);
      return;
    }
    if (p === '/site.css') {
      res.writeHead(200, { 'content-type': 'text/css' }).end(':root{--brand:#1a73e8} body{color:#222;background:#fffdf7;font-family:Inter,sans-serif} a{color:#ff5722}');
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
  }

  private page(res: http.ServerResponse): void {
    const html =
      '<!doctype html><html><head><title>Hold Co</title><meta name="theme-color" content="#1a73e8">' +
      '<link rel="stylesheet" href="/site.css"></head><body><header><svg width="40" height="20"><rect width="40" height="20" fill="#1a73e8"/></svg></header>' +
      '<h1>Hold Co</h1></body></html>';
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html);
  }

  /** Stops holding and answers every held page request. */
  release(): void {
    this.holding = false;
    for (const res of this.held.splice(0)) if (!res.destroyed) this.page(res);
  }

  async close(): Promise<void> {
    for (const res of this.held.splice(0)) res.destroy();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
