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
 * extensions the service leans on: its hashing (SHA-256 of keys, MD5 of uploads: sha_ni, avx2) and
 * the int8 upscaler (avx512_vnni or avx_vnni: ONNX Runtime's int8 convolutions take about half
 * the time with them).
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
    ['sha_ni', 'avx2', 'avx512f', 'avx512_vnni', 'avx_vnni'].filter((f) => flags.has(f)).join(' ') || 'no sha_ni/avx2',
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

/**
 * Counters the kernel keeps for the whole machine, read at the start and at the end of a
 * measurement (issue 37): the CPU time the hypervisor gave other guests while this one wanted it
 * (steal, /proc/stat) and the time some task here waited for a CPU (PSI, /proc/pressure/cpu, "some"
 * total in µs). Their deltas tell a slower machine, or a busier one, from a slower Toolrun.
 */
export interface CpuCounters {
  /** Date.now() when read. */
  at: number;
  /** /proc/stat's first line: steal ticks, and all ticks (user .. steal). */
  stealTicks: number;
  totalTicks: number;
  /** /proc/pressure/cpu "some" total, µs; null without PSI (kernel < 4.20, or turned off). */
  pressureSomeUs: number | null;
}

export function cpuCounters(): CpuCounters | null {
  let stat = '';
  try {
    stat = fs.readFileSync('/proc/stat', 'utf8');
  } catch {
    return null; // not Linux
  }
  // cpu  user nice system idle iowait irq softirq steal guest guest_nice (guest time is in user already)
  const ticks = (/^cpu\s+(.*)$/m.exec(stat)?.[1] ?? '').split(/\s+/).slice(0, 8).map(Number);
  if (ticks.length < 8 || ticks.some((t) => !Number.isFinite(t))) return null;
  let pressureSomeUs: number | null = null;
  try {
    const m = /^some .*total=(\d+)/m.exec(fs.readFileSync('/proc/pressure/cpu', 'utf8'));
    if (m?.[1]) pressureSomeUs = Number(m[1]);
  } catch {
    // no PSI here
  }
  return { at: Date.now(), stealTicks: ticks[7] ?? 0, totalTicks: ticks.reduce((a, b) => a + b, 0), pressureSomeUs };
}

/** What the machine was like between two readings. */
export interface Conditions {
  seconds: number;
  /** Steal over all CPU time, %; null when the kernel counts none (no reading). */
  stealPct: number | null;
  /** Share of the wall time some task waited for a CPU, %; null without PSI. */
  cpuPressurePct: number | null;
}

export function conditionsBetween(a: CpuCounters | null | undefined, b: CpuCounters | null | undefined): Conditions | null {
  if (!a || !b || b.at <= a.at) return null;
  const ticks = b.totalTicks - a.totalTicks;
  const wallUs = (b.at - a.at) * 1000;
  return {
    seconds: (b.at - a.at) / 1000,
    stealPct: ticks > 0 ? (100 * (b.stealTicks - a.stealTicks)) / ticks : null,
    cpuPressurePct: a.pressureSomeUs !== null && b.pressureSomeUs !== null ? Math.min(100, (100 * (b.pressureSomeUs - a.pressureSomeUs)) / wallUs) : null,
  };
}

export function conditionsText(c: Conditions | null): string {
  if (!c) return 'machine conditions not recorded';
  const pressure = c.cpuPressurePct === null ? 'CPU pressure not available (no PSI)' : `some task waited for a CPU ${c.cpuPressurePct.toFixed(1)}% of the time (PSI)`;
  const steal = c.stealPct === null ? 'steal not counted' : `steal ${c.stealPct.toFixed(1)}% of CPU time`;
  return `over the ${Math.round(c.seconds)} s measured: ${steal}, ${pressure}`;
}

/**
 * How long a binary takes to start and exit (`-version`), median of `n`, and its version line: a
 * dynamically linked ffprobe (Debian's links 215 libraries) spends tens of ms in the loader before
 * it reads a byte, and the engine runs one per video output (issue 37).
 */
export async function startCost(bin: string, n = 7): Promise<{ bin: string; version: string; ms: number }> {
  const times: number[] = [];
  let version = UNKNOWN;
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const line = await firstLine(bin, ['-version']);
    times.push(performance.now() - t0);
    if (line) version = line.replace(/ Copyright.*$/, '').trim();
  }
  times.sort((a, b) => a - b);
  return { bin, version, ms: times[Math.floor(times.length / 2)] ?? Number.NaN };
}
