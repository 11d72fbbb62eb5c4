// The processes a test started, read from /proc: every descendant of a process (children,
// grandchildren, ...), each with its start time so a pid the kernel gave to another process later
// is not taken for it.
import fs from 'node:fs';

export interface ProcessEntry {
  pid: number;
  ppid: number;
  /** The executable's name (comm), at most 15 characters. */
  name: string;
  state: string;
  /** In clock ticks after boot: with the pid, names one process for good. */
  start: number;
}

function read(pid: number): ProcessEntry | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const close = stat.lastIndexOf(')');
    const fields = stat.slice(close + 2).split(' ');
    return { pid, ppid: Number(fields[1]), name: stat.slice(stat.indexOf('(') + 1, close), state: fields[0]!, start: Number(fields[19]) };
  } catch {
    return null;
  }
}

export function allProcesses(): ProcessEntry[] {
  const out: ProcessEntry[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const p = read(Number(entry));
    if (p) out.push(p);
  }
  return out;
}

/** Every living (not zombie) descendant of `root`. */
export function descendants(root = process.pid): ProcessEntry[] {
  const all = allProcesses();
  const out: ProcessEntry[] = [];
  const parents = [root];
  while (parents.length) {
    const parent = parents.pop()!;
    for (const p of all) {
      if (p.ppid !== parent) continue;
      parents.push(p.pid);
      if (p.state !== 'Z') out.push(p);
    }
  }
  return out;
}

export const isChromium = (p: ProcessEntry) => /chrom/i.test(p.name);

/** Those of `seen` still running as the same process (same pid and start time, not a zombie). */
export function stillRunning(seen: ProcessEntry[]): ProcessEntry[] {
  return seen.filter((p) => {
    const now = read(p.pid);
    return now !== null && now.start === p.start && now.state !== 'Z';
  });
}

/** Its command line, NUL-separated arguments split. */
export function commandLine(pid: number): string[] {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return [];
  }
}
