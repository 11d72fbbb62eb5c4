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

/**
 * The model name, and what tells two CPUs of the same name apart (a virtual machine may report
 * only "AMD EPYC" or "Intel Xeon Processor"): family, model and stepping, the clock, and the
 * extensions the service's hashing leans on (SHA-256 of keys, MD5 of uploads: sha_ni, avx2).
 */
export function cpuModel(): string {
  const name = os.cpus()[0]?.model.trim() || UNKNOWN;
  let info = '';
  try {
    info = fs.readFileSync('/proc/cpuinfo', 'utf8').split('\n\n')[0] ?? '';
  } catch {
    return name;
  }
  const field = (key: string) => new RegExp(`^${key}\\s*:\\s*(.*)$`, 'm').exec(info)?.[1]?.trim();
  const flags = new Set((field('flags') ?? '').split(' '));
  const mhz = Number(field('cpu MHz'));
  const parts = [
    field('vendor_id'),
    field('cpu family') !== undefined ? `family ${field('cpu family')} model ${field('model') ?? '?'} stepping ${field('stepping') ?? '?'}` : undefined,
    Number.isFinite(mhz) && mhz > 0 ? `${(mhz / 1000).toFixed(2)} GHz` : undefined,
    ['sha_ni', 'avx2', 'avx512f'].filter((f) => flags.has(f)).join(' ') || 'no sha_ni/avx2',
  ].filter(Boolean);
  return `${name} (${parts.join(', ')})`;
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
