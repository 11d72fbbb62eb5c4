// A private PostgreSQL server for the database-outage fault test, on its own data directory and
// port, that the test can stop and start again on the same port. It is initialised by the
// product's own embedded-server code (src/db/embedded.ts: initdb, password, database "toolrun"),
// then run by the same binaries here, so that it can come back on the port the service knows.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { resolveBinaries, runAsUser } from '../../src/db/embedded-host.js';
import { startEmbeddedPostgres } from '../../src/db/embedded.js';
import { createLogger } from '../../src/logger.js';
import { childrenOf } from './faults.js';
import { makeDataDir, waitFor } from './process.js';

const live = new Set<ChildProcess>();
// Last resort if the test process ends without its after hooks: no server outlives it.
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

export class PrivatePostgres {
  private child: ChildProcess | null = null;
  private stderr = '';

  private constructor(
    readonly dataDir: string,
    /** postgres://toolrun:...@127.0.0.1:PORT/toolrun */
    readonly url: string,
  ) {}

  get port(): number {
    return Number(new URL(this.url).port);
  }

  /** Initialises a data directory with the embedded-server code and starts the server on its port. */
  static async create(): Promise<PrivatePostgres> {
    const dataDir = makeDataDir('faults-pg');
    const logger = createLogger('silent');
    const embedded = await startEmbeddedPostgres({ dataDir, logger });
    const url = embedded.connectionString;
    // Stopped and started again by us, on the same port, so the test controls its life.
    await embedded.stop();
    const p = new PrivatePostgres(dataDir, url);
    await p.start();
    return p;
  }

  get running(): boolean {
    return this.child !== null;
  }

  /** Starts the server on the same port and waits until it answers. */
  async start(): Promise<void> {
    if (this.child) return;
    const bins = resolveBinaries();
    const runAs = runAsUser(createLogger('silent'));
    this.stderr = '';
    const child = spawn(
      bins.postgres,
      ['-D', path.join(this.dataDir, 'pg'), '-p', String(this.port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=100'],
      { stdio: ['ignore', 'ignore', 'pipe'], ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}) },
    );
    child.stderr?.on('data', (c: Buffer) => (this.stderr = (this.stderr + c.toString()).slice(-8000)));
    live.add(child);
    child.once('exit', () => {
      live.delete(child);
      if (this.child === child) this.child = null;
    });
    this.child = child;
    await waitFor(
      `private PostgreSQL on port ${this.port}`,
      async () => {
        if (this.child !== child) throw new Error(`PostgreSQL exited while starting: ${this.stderr}`);
        const c = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: 2000 });
        try {
          await c.connect();
          await c.query('SELECT 1');
          return true;
        } catch {
          return false;
        } finally {
          await c.end().catch(() => undefined);
        }
      },
      60_000,
      100,
    );
  }

  /**
   * Stops the server the way an operator's restart does (fast shutdown: open sessions are
   * terminated, then the port closes) and waits until it has exited.
   */
  async stop(signal: NodeJS.Signals = 'SIGINT'): Promise<void> {
    const child = this.child;
    if (!child) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill(signal);
    await exited;
  }

  /**
   * Freezes the server (SIGSTOP to the postmaster and every backend): connections stay open and
   * the port accepts, but nothing answers, as with a hung host or a network that drops packets.
   */
  freeze(): void {
    for (const pid of this.pids()) process.kill(pid, 'SIGSTOP');
  }

  thaw(): void {
    for (const pid of this.pids()) {
      try {
        process.kill(pid, 'SIGCONT');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err; // ended meanwhile
      }
    }
  }

  private pids(): number[] {
    const pid = this.child?.pid;
    if (!pid) throw new Error('the private PostgreSQL is not running');
    return [pid, ...childrenOf(pid).map((p) => p.pid)];
  }

  /** Stops the server (immediately) and removes its data directory. */
  async destroy(): Promise<void> {
    if (this.child) this.thaw();
    await this.stop('SIGQUIT');
    fs.rmSync(this.dataDir, { recursive: true, force: true });
  }
}
