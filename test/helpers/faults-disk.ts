// A real small file system for the disk-full fault test: a tmpfs mounted on a fresh directory
// (needs root, or CAP_SYS_ADMIN, and a kernel that allows it: containers often do not). When it
// cannot be mounted, mountTmpfs says why, so the test can skip with that reason.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface Tmpfs {
  dir: string;
  /** Bytes a new file may still take. */
  free(): number;
  /** Fills the file system until only `leave` bytes are free; returns the filler's path. */
  fill(leave: number): string;
  unmount(): void;
}

/** Every regular file under dir (relative paths), for "nothing was left behind" checks. */
export function filesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() || entry.isSymbolicLink()) out.push(path.relative(dir, path.join(entry.parentPath, entry.name)));
  }
  return out.sort();
}

/** Mounts a tmpfs of sizeBytes, or returns the reason it cannot. */
export function mountTmpfs(sizeBytes: number): Tmpfs | { skip: string } {
  if (process.platform !== 'linux') return { skip: `tmpfs mounts need Linux (this is ${process.platform})` };
  if (typeof process.getuid === 'function' && process.getuid() !== 0) return { skip: 'mounting a tmpfs needs root' };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-tmpfs-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeBytes},mode=0755`, 'tmpfs', dir], { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true });
    const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim();
    return { skip: `cannot mount a tmpfs here (${stderr || (err as Error).message})` };
  }
  let mounted = true;
  const free = () => {
    const st = fs.statfsSync(dir);
    return st.bavail * st.bsize;
  };
  return {
    dir,
    free,
    fill(leave) {
      const filler = path.join(dir, 'filler.bin');
      fs.writeFileSync(filler, Buffer.alloc(Math.max(0, free() - leave)));
      return filler;
    },
    unmount() {
      if (!mounted) return;
      mounted = false;
      // Lazy: a process still holding a file there must not keep the mount alive for good.
      execFileSync('umount', ['-l', dir], { stdio: 'ignore' });
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
