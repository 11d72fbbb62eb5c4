/**
 * Helpers for bench/upload.ts: the synthetic file (one random part buffer reused, with a small
 * header per part so no two parts are equal), the part PUT client, the baseline (write plus each
 * part's MD5), the bare plain-stream write, an RSS sampler and CPU counters reading /proc, and the
 * diagnostics (MD5 alone, file copies).
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import { once } from 'node:events';
import { pipeline } from 'node:stream/promises';
import { writeAll } from '../../src/storage/part-stream.js';

export const HEADER_BYTES = 32;

/** A file of `totalBytes` in parts of `partBytes`, built from one random buffer without holding it whole. */
export class SyntheticFile {
  private readonly shared: Buffer;
  readonly partCount: number;

  constructor(
    readonly totalBytes: number,
    readonly partBytes: number,
  ) {
    if (partBytes <= HEADER_BYTES) throw new Error('part size too small');
    this.shared = randomBytes(partBytes);
    this.partCount = Math.ceil(totalBytes / partBytes);
  }

  /** Part `n` (1-based) as chunks to write in order: a distinct header, then the shared random tail. */
  part(n: number, round: number): Buffer[] {
    const size = Math.min(this.partBytes, this.totalBytes - (n - 1) * this.partBytes);
    const header = Buffer.alloc(Math.min(HEADER_BYTES, size), 0x20);
    header.write(`\u0000bench r${round} part ${n}\u0000`, 'latin1');
    return size > HEADER_BYTES ? [header, this.shared.subarray(HEADER_BYTES, size)] : [header];
  }
}

const byteLength = (chunks: Buffer[]) => chunks.reduce((n, c) => n + c.length, 0);

/** PUTs one part (Content-Length set, body written from the given buffers) and returns its ETag. */
export function putPart(url: string, chunks: Buffer[], agent: http.Agent): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: 'PUT',
        agent,
        headers: { 'content-type': 'application/octet-stream', 'content-length': String(byteLength(chunks)) },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('error', reject);
        res.on('end', () => {
          const etag = res.headers.etag;
          if (res.statusCode !== 200 || !etag) reject(new Error(`PUT part answered ${res.statusCode ?? '?'}: ${body}`));
          else resolve(etag);
        });
      },
    );
    req.on('error', reject);
    for (const c of chunks) req.write(c);
    req.end();
  });
}

/** Runs `worker(i)` for i in 0..count-1 with at most `limit` in flight. */
export async function inFlight<T>(count: number, limit: number, worker: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array<T>(count);
  let next = 0;
  const lane = async () => {
    while (next < count) {
      const i = next++;
      results[i] = await worker(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, count) }, lane));
  return results;
}

export interface Timing {
  seconds: number;
  /** CPU seconds this process used meanwhile, its libuv threads included. */
  cpuS: number;
}

/** Wall and CPU time of `fn` in this process. */
export async function timed(fn: () => unknown): Promise<Timing> {
  const cpu0 = procCpuSeconds(process.pid);
  const t0 = performance.now();
  await fn();
  return { seconds: (performance.now() - t0) / 1000, cpuS: procCpuSeconds(process.pid) - cpu0 };
}

/**
 * The bare write (a diagnostic beside the baseline, writeWithMd5): the same part buffers, in
 * order, through one fs.createWriteStream, to 'close'.
 * partMs: how long each part took to hand over (its writes, and waiting for 'drain' when the
 * stream pushed back), the per-part distribution the report sets beside the upload's part PUTs.
 */
export async function plainWrite(file: string, data: SyntheticFile, round: number): Promise<Timing & { partMs: number[] }> {
  const partMs: number[] = [];
  const t = await timed(async () => {
    const ws = createWriteStream(file);
    for (let n = 1; n <= data.partCount; n++) {
      const t0 = performance.now();
      for (const c of data.part(n, round)) {
        if (!ws.write(c)) await once(ws, 'drain');
      }
      partMs.push(performance.now() - t0);
    }
    ws.end();
    await once(ws, 'close');
  });
  return { ...t, partMs };
}

/** The bytes the baseline writes and hashes at a time: the service's write batch (part-stream.ts). */
const BASELINE_SLICE = 1024 * 1024;

/** `chunks` cut into runs of at most `size` bytes (views, no copies), in order. */
function slices(chunks: Buffer[], size: number): Buffer[][] {
  const out: Buffer[][] = [];
  let run: Buffer[] = [];
  let room = size;
  for (const c of chunks) {
    for (let o = 0; o < c.length; ) {
      const piece = c.subarray(o, o + room);
      run.push(piece);
      o += piece.length;
      room -= piece.length;
      if (room === 0) {
        out.push(run);
        run = [];
        room = size;
      }
    }
  }
  if (run.length) out.push(run);
  return out;
}

/**
 * The baseline the upload is held to: the work it cannot avoid. The same part buffers, in order,
 * written to one file, and each part's MD5 (the ETag a part PUT answers with) taken while the
 * bytes are written: each 1 MiB slice's write(2) is handed to libuv's threadpool, then this thread
 * hashes the slice; once more than `writesInFlight` writes are under way the oldest is awaited
 * (1: each write is awaited before the next slice). With writesInFlight set to the upload's parts
 * in flight this is the parallelism the service has: one write under way per part being
 * received, on the threadpool, in 1 MiB batches, and one worker thread hashing them. The same
 * unit keeps the bytes in cache between the two passes. No network, no read-back. Returns each
 * part's bare hex MD5, which must equal the upload's ETags for that round.
 */
export async function writeWithMd5(
  file: string,
  data: SyntheticFile,
  round: number,
  writesInFlight = 1,
): Promise<Timing & { partMs: number[]; md5s: string[] }> {
  const partMs: number[] = [];
  const md5s: string[] = [];
  const t = await timed(async () => {
    const handle = await fs.open(file, 'w');
    const writing: Promise<void>[] = [];
    try {
      let position = 0;
      for (let n = 1; n <= data.partCount; n++) {
        const t0 = performance.now();
        const md5 = createHash('md5');
        for (const run of slices(data.part(n, round), BASELINE_SLICE)) {
          const write = writeAll(handle, run, position);
          // Awaited below; until then a failure must not go unhandled.
          write.catch(() => undefined);
          writing.push(write);
          for (const piece of run) md5.update(piece);
          // The oldest writes are awaited once more than writesInFlight are under way.
          while (writing.length > writesInFlight - 1) await writing.shift();
          position += byteLength(run);
        }
        md5s.push(md5.digest('hex'));
        partMs.push(performance.now() - t0);
      }
      await Promise.all(writing);
    } finally {
      await Promise.allSettled(writing);
      await handle.close();
    }
  });
  return { ...t, partMs, md5s };
}


/** Flushes dirty pages so that every timed phase starts with the same writeback state. */
export function syncDisks(): void {
  execFileSync('sync');
}

/** User and system CPU seconds from a /proc stat file (USER_HZ is 100 on Linux). */
function statCpu(file: string): { user: number; sys: number } {
  const stat = readFileSync(file, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { user: Number(fields[11]) / 100, sys: Number(fields[12]) / 100 };
}

/** CPU seconds (user + system, all threads) a process has used: /proc/<pid>/stat utime + stime. */
export function procCpuSeconds(pid: number): number {
  const { user, sys } = statCpu(`/proc/${pid}/stat`);
  return user + sys;
}

/** A process's CPU seconds split: user and system, and what its main (event loop) thread took. */
export interface CpuSplit {
  user: number;
  sys: number;
  main: number;
}

export function procCpuSplit(pid: number): CpuSplit {
  const all = statCpu(`/proc/${pid}/stat`);
  const main = statCpu(`/proc/${pid}/task/${pid}/stat`);
  return { user: all.user, sys: all.sys, main: main.user + main.sys };
}

export const cpuSplitDelta = (a: CpuSplit, b: CpuSplit): CpuSplit => ({ user: b.user - a.user, sys: b.sys - a.sys, main: b.main - a.main });

export function procRssBytes(pid: number): number | null {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m?.[1] ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

export interface RssTrace {
  before: number;
  peak: number;
  samples: number;
}

/** Samples a process's RSS every `everyMs` until stopped; `before` is the sample at start. */
export function sampleRss(pid: number, everyMs: number): { stop(): RssTrace } {
  const before = procRssBytes(pid) ?? 0;
  let peak = before;
  let samples = 1;
  const timer = setInterval(() => {
    const v = procRssBytes(pid);
    if (v === null) return;
    samples++;
    if (v > peak) peak = v;
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      const v = procRssBytes(pid);
      if (v !== null && v > peak) peak = v;
      return { before, peak, samples: samples + 1 };
    },
  };
}

/** Diagnostic: MD5 over the same bytes in 64 KiB slices (as socket chunks arrive), no I/O. */
export function md5Only(data: SyntheticFile, round: number): Promise<Timing> {
  return timed(() => {
    for (let n = 1; n <= data.partCount; n++) {
      const md5 = createHash('md5');
      for (const c of data.part(n, round)) {
        for (let o = 0; o < c.length; o += 65536) md5.update(c.subarray(o, o + 65536));
      }
      md5.digest();
    }
  });
}

/** Diagnostic: a file copied as completion assembles parts, default-sized stream chunks. */
export function streamCopy(from: string, to: string): Promise<Timing> {
  return timed(() => pipeline(createReadStream(from), createWriteStream(to)));
}

/** Diagnostic: the same copy through FileHandle read/write with one reused 8 MiB buffer. */
export function bufferedCopy(from: string, to: string): Promise<Timing> {
  return timed(async () => {
    const src = await fs.open(from, 'r');
    const dst = await fs.open(to, 'w');
    try {
      const buf = Buffer.allocUnsafe(8 * 1024 * 1024);
      for (let pos = 0; ; ) {
        const { bytesRead } = await src.read(buf, 0, buf.length, pos);
        if (!bytesRead) break;
        await dst.write(buf, 0, bytesRead, pos);
        pos += bytesRead;
      }
    } finally {
      await src.close();
      await dst.close();
    }
  });
}

/**
 * The diagnostics, each alone: MD5 of the data, then both copies of a plain-written file (removed
 * after), each after `sync` and the same settling pause as the timed phases.
 */
export async function diagnostics(data: SyntheticFile, file: string, settleMs: number): Promise<Record<'md5' | 'streamCp' | 'bufferedCp', Timing>> {
  const settle = () => {
    syncDisks();
    return new Promise((resolve) => setTimeout(resolve, settleMs));
  };
  const md5 = await md5Only(data, 0);
  await plainWrite(file, data, 0);
  try {
    await settle();
    const streamCp = await streamCopy(file, `${file}.copy`);
    await fs.rm(`${file}.copy`, { force: true });
    await settle();
    const bufferedCp = await bufferedCopy(file, `${file}.copy`);
    return { md5, streamCp, bufferedCp };
  } finally {
    await fs.rm(`${file}.copy`, { force: true });
    await fs.rm(file, { force: true });
  }
}

/** How busy the machine is: 1-minute load average and CPU pressure (% of the last 10 s some task waited). */
export function machineLoad(): { load1: number; cpuPressure10s: number | null } {
  let cpuPressure10s: number | null = null;
  try {
    const m = /^some avg10=([\d.]+)/m.exec(readFileSync('/proc/pressure/cpu', 'utf8'));
    if (m?.[1]) cpuPressure10s = Number(m[1]);
  } catch {
    // no PSI on this kernel
  }
  return { load1: os.loadavg()[0] ?? 0, cpuPressure10s };
}
