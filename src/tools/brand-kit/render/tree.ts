import fs from 'node:fs';

/** One process as /proc shows it: with its start time, the pid names it for good (pids are reused). */
interface Proc {
  pid: number;
  ppid: number;
  pgid: number;
  /** Clock ticks after boot. */
  start: number;
  zombie: boolean;
}

function readProc(pid: number): Proc | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The name may hold spaces and parentheses: the fields start after the last ')'.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { pid, ppid: Number(f[1]), pgid: Number(f[2]), start: Number(f[19]), zombie: f[0] === 'Z' || f[0] === 'X' };
  } catch {
    return null;
  }
}

function allPids(): number[] {
  try {
    return fs.readdirSync('/proc').filter((e) => /^\d+$/.test(e)).map(Number);
  } catch {
    return [];
  }
}

/** A process's children, from /proc/<pid>/task/<tid>/children where the kernel has it, else from every process's parent. */
function childrenOf(pid: number, scan: () => Proc[]): number[] {
  let tasks: string[];
  try {
    tasks = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  const out: number[] = [];
  for (const t of tasks) {
    let text: string;
    try {
      text = fs.readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8');
    } catch {
      return scan().filter((p) => p.ppid === pid).map((p) => p.pid);
    }
    for (const c of text.split(' ')) if (c) out.push(Number(c));
  }
  return out;
}

/** Resident memory the kernel cannot drop (anonymous and shared memory), in bytes; 0 when gone. */
function residentBytes(pid: number): number {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status)?.[1] ?? 0);
    return (kb('RssAnon') + kb('RssShmem')) * 1024;
  } catch {
    return 0;
  }
}

const sameProcess = (p: Proc) => {
  const now = readProc(p.pid);
  return now !== null && now.start === p.start && !now.zombie;
};

const kill = (pid: number) => {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // gone already
  }
};

/**
 * The render's process tree as the service sees it from /proc: the child process and everything
 * under it, each member remembered (pid, start time, process group) from the first time it is
 * seen. Chromium runs as a process group of its own (Playwright starts it detached) and starts
 * helpers that leave the tree (crashpad's handler forks twice): so `killAll` kills every member
 * still running as itself, every process of their groups, and every process whose command line
 * names the render's directory (Chromium's profile and crash database are in it); it still
 * finds them after the child process itself was killed and its Chromium reparented.
 */
export class ProcessTree {
  private readonly known = new Map<number, Proc>();

  constructor(
    private readonly root: number,
    /** The browser's own directory (its HOME and TMPDIR), which its command lines name. */
    private readonly dir: string,
  ) {}

  /** Walks the tree, remembers new members, and returns their resident memory summed. */
  sample(): number {
    let everyone: Proc[] | null = null;
    const scan = () => (everyone ??= allPids().map(readProc).filter((p): p is Proc => p !== null));
    let total = 0;
    const stack = [this.root];
    const seen = new Set<number>();
    while (stack.length) {
      const pid = stack.pop()!;
      if (seen.has(pid)) continue;
      seen.add(pid);
      const p = this.known.get(pid) ?? readProc(pid);
      if (!p || p.zombie) continue;
      if (!this.known.has(pid)) this.known.set(pid, p);
      total += residentBytes(pid);
      stack.push(...childrenOf(pid, scan));
    }
    return total;
  }

  /** Members still running as themselves. */
  running(): number[] {
    return [...this.known.values()].filter(sameProcess).map((p) => p.pid);
  }

  /** SIGKILLs everything of the render that still runs (see the class); returns how many. */
  killAll(): number {
    this.sample();
    const targets = new Set<number>();
    const groups = new Set<number>();
    for (const p of this.known.values()) {
      if (!sameProcess(p)) continue;
      targets.add(p.pid);
      // A group counts only while one of our own still runs in it: its id cannot then be reused.
      if (p.pgid > 1 && p.pgid !== process.pid && p.pgid !== readProc(process.pid)?.pgid) groups.add(p.pgid);
    }
    for (const pid of allPids()) {
      if (pid === process.pid) continue;
      const p = readProc(pid);
      if (!p || p.zombie) continue;
      if (groups.has(p.pgid)) targets.add(pid);
      else if (this.namesDir(pid)) targets.add(pid);
    }
    for (const pid of targets) kill(pid);
    return targets.size;
  }

  private namesDir(pid: number): boolean {
    try {
      return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(`${this.dir}/`);
    } catch {
      return false;
    }
  }
}
