/**
 * The machine a benchmark report was measured on: CPU, memory, OS, Node.js, PostgreSQL and
 * ffmpeg versions. Each read is best effort: a missing file or binary gives "unknown", never a
 * failed report.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import pg from 'pg';
import { resolveBinaries } from '../../src/db/embedded-host.js';
import { resolveMediaBinaries } from '../../src/media/binaries.js';

export interface MachineInfo {
  cpuModel: string;
  cores: number;
  memoryBytes: number;
  os: string;
  kernel: string;
  node: string;
  postgres: string;
  ffmpeg: string;
}

const UNKNOWN = 'unknown';

function firstLine(cmd: string, args: string[]): Promise<string | null> {
  return new Promise((resolve) =>
    execFile(cmd, args, { timeout: 10_000 }, (err, stdout) => resolve(err ? null : (stdout.split('\n')[0]?.trim() ?? null))),
  );
}

function osName(): string {
  try {
    const m = /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(fs.readFileSync('/etc/os-release', 'utf8'));
    if (m?.[1]) return m[1];
  } catch {
    // not Linux, or no os-release
  }
  return `${os.type()} ${os.release()}`;
}

function cpuModel(): string {
  return os.cpus()[0]?.model.trim() || UNKNOWN;
}

/** The server behind DATABASE_URL, else the embedded binaries' own version. */
async function postgresVersion(): Promise<string> {
  const url = process.env.DATABASE_URL;
  if (url) {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
    try {
      await client.connect();
      const { rows } = await client.query<{ server_version: string }>('SHOW server_version');
      return `${rows[0]?.server_version ?? UNKNOWN} (DATABASE_URL)`;
    } catch {
      return `${UNKNOWN} (DATABASE_URL did not answer)`;
    } finally {
      await client.end().catch(() => undefined);
    }
  }
  try {
    const line = await firstLine(resolveBinaries().postgres, ['--version']);
    return line ? `${line.replace(/^postgres \(PostgreSQL\)\s*/, '')} (embedded)` : UNKNOWN;
  } catch {
    return UNKNOWN;
  }
}

export async function machineInfo(): Promise<MachineInfo> {
  const ffmpeg = await firstLine(resolveMediaBinaries().ffmpeg, ['-version']).catch(() => null);
  return {
    cpuModel: cpuModel(),
    cores: os.availableParallelism(),
    memoryBytes: os.totalmem(),
    os: osName(),
    kernel: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    postgres: await postgresVersion(),
    ffmpeg: ffmpeg?.replace(/ Copyright.*$/, '').trim() || UNKNOWN,
  };
}
