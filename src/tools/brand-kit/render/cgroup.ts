import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/**
 * A memory cgroup for one render, made under the service process's own cgroup: the kernel then
 * holds the render's whole process tree (the child process and every Chromium process, helpers
 * that leave the tree included) to a hard limit, kills inside it when it is crossed (the OOM
 * killer, scoped to the group), and can kill all of it at once. Both hierarchies, found at run
 * time from /proc/self/cgroup and /proc/self/mountinfo:
 *   v2: memory.max (and memory.swap.max 0), memory.events' oom_kill, cgroup.kill;
 *   v1: memory.limit_in_bytes (and memory.memsw.limit_in_bytes where swap is accounted),
 *       memory.oom_control's oom_kill, SIGKILL to each of cgroup.procs.
 * v2 needs the memory controller enabled in the service's cgroup.subtree_control (a delegated
 * subtree, systemd's Delegate=yes with the service in a leaf of its own); v1 needs write access
 * to the service's memory cgroup (root, or a delegated one). Where neither is possible, `create`
 * returns null and the watchdog (tree.ts) is the bound.
 */
export class MemoryCgroup {
  private constructor(
    readonly version: 1 | 2,
    readonly dir: string,
  ) {}

  /** A new cgroup limited to `limitBytes`, or null when none can be made here. */
  static create(limitBytes: number): MemoryCgroup | null {
    for (const found of ownCgroups()) {
      removeStale(found.dir);
      const dir = path.join(found.dir, `toolrun-render-${process.pid}-${randomBytes(4).toString('hex')}`);
      try {
        if (found.version === 2 && !/\bmemory\b/.test(read(path.join(found.dir, 'cgroup.subtree_control')))) continue;
        fs.mkdirSync(dir);
      } catch {
        continue;
      }
      const group = new MemoryCgroup(found.version, dir);
      try {
        if (found.version === 2) {
          fs.writeFileSync(path.join(dir, 'memory.max'), String(limitBytes));
          group.tryWrite('memory.swap.max', '0');
        } else {
          fs.writeFileSync(path.join(dir, 'memory.limit_in_bytes'), String(limitBytes));
          group.tryWrite('memory.memsw.limit_in_bytes', String(limitBytes));
        }
        return group;
      } catch {
        group.removeNow();
      }
    }
    return null;
  }

  get name(): 'cgroup v1' | 'cgroup v2' {
    return this.version === 2 ? 'cgroup v2' : 'cgroup v1';
  }

  /** Moves a process (the render's child, before it starts anything) into the group. */
  adopt(pid: number): void {
    fs.writeFileSync(path.join(this.dir, 'cgroup.procs'), String(pid));
  }

  /** Memory the kernel charges to the group now, in bytes. */
  usage(): number {
    return Number(read(path.join(this.dir, this.version === 2 ? 'memory.current' : 'memory.usage_in_bytes')) || 0);
  }

  /** The group's peak, where the kernel keeps one (v1; v2 from Linux 5.19), else null. */
  peak(): number | null {
    const text = read(path.join(this.dir, this.version === 2 ? 'memory.peak' : 'memory.max_usage_in_bytes'));
    return text ? Number(text) : null;
  }

  /** Processes the kernel killed in the group for crossing its limit. */
  oomKills(): number {
    const text = read(path.join(this.dir, this.version === 2 ? 'memory.events' : 'memory.oom_control'));
    return Number(/^oom_kill (\d+)$/m.exec(text)?.[1] ?? 0);
  }

  /** Kills every process in the group; returns once none is left, or after `timeoutMs`. */
  async killAll(timeoutMs = 2000): Promise<void> {
    if (this.version === 2 && this.tryWrite('cgroup.kill', '1')) {
      await this.emptied(timeoutMs);
      return;
    }
    const until = Date.now() + timeoutMs;
    // A process may start another between the read and the kill: read again until none is left.
    for (;;) {
      const pids = this.pids();
      if (!pids.length || Date.now() > until) return;
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone already
        }
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Removes the group once its processes are gone (waiting up to `timeoutMs`); false if it could not be removed. */
  async remove(timeoutMs = 2000): Promise<boolean> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      if (this.removeNow()) return true;
      if (Date.now() > until) return false;
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  private pids(): number[] {
    return read(path.join(this.dir, 'cgroup.procs')).split('\n').filter(Boolean).map(Number);
  }

  private async emptied(timeoutMs: number): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (this.pids().length && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  }

  private removeNow(): boolean {
    try {
      fs.rmdirSync(this.dir);
      return true;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'ENOENT';
    }
  }

  private tryWrite(file: string, value: string): boolean {
    try {
      fs.writeFileSync(path.join(this.dir, file), value);
      return true;
    } catch {
      return false;
    }
  }
}

/**
 * Removes the empty render cgroups of service processes that are gone (killed before they could
 * remove them; their child processes end with them, see render-child.ts). rmdir refuses a
 * cgroup that still holds a process, so nothing running is touched.
 */
function removeStale(parent: string): void {
  let entries: string[];
  try {
    entries = fs.readdirSync(parent);
  } catch {
    return;
  }
  for (const name of entries) {
    const owner = /^toolrun-render-(\d+)-[0-9a-f]{8}$/.exec(name)?.[1];
    if (!owner || Number(owner) === process.pid || fs.existsSync(`/proc/${owner}`)) continue;
    try {
      fs.rmdirSync(path.join(parent, name));
    } catch {
      // still in use, or not ours to remove
    }
  }
}

function read(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch {
    return '';
  }
}

const ownCgroups = () => cgroupDirs(read('/proc/self/cgroup'), read('/proc/self/mountinfo'));

/**
 * A process's memory cgroups (v2 first, then v1) as directories under their mount points, from
 * its /proc/<pid>/cgroup and /proc/<pid>/mountinfo (a mount's root may be a cgroup itself, as in a
 * container: the path is then taken relative to it).
 */
export function cgroupDirs(procCgroup: string, mountinfo: string): { version: 1 | 2; dir: string }[] {
  const lines = procCgroup.split('\n');
  const mounts = mountinfo.split('\n').map((l) => {
    // id parent major:minor root mount-point options [optional fields] - fstype source super-options
    const [left, right] = l.split(' - ');
    const f = (left ?? '').split(' ');
    const g = (right ?? '').split(' ');
    return { root: f[3] ?? '', point: f[4] ?? '', fstype: g[0] ?? '', options: g[2] ?? '' };
  });
  const under = (mount: { root: string; point: string }, cgroupPath: string) => {
    const rel = mount.root !== '/' && cgroupPath.startsWith(mount.root) ? cgroupPath.slice(mount.root.length) : cgroupPath;
    return path.join(mount.point.replace(/\\040/g, ' '), rel).replace(/(.)\/+$/, '$1');
  };
  const out: { version: 1 | 2; dir: string }[] = [];
  const v2 = lines.find((l) => l.startsWith('0::'))?.slice(3);
  const v2mount = mounts.find((m) => m.fstype === 'cgroup2');
  if (v2 !== undefined && v2mount) out.push({ version: 2, dir: under(v2mount, v2) });
  const v1 = lines.map((l) => l.split(':')).find((f) => f.length >= 3 && f[1]!.split(',').includes('memory'))?.slice(2).join(':');
  const v1mount = mounts.find((m) => m.fstype === 'cgroup' && m.options.split(',').includes('memory'));
  if (v1 !== undefined && v1mount) out.push({ version: 1, dir: under(v1mount, v1) });
  return out;
}
