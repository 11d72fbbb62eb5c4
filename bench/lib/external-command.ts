/** bench:tools' outside baselines: a command run once, and whether ImageMagick is there to run. */
import { execFile, spawn } from 'node:child_process';
import { sampleTree } from './app-children.js';

/** Wall time and the peak RSS of the command's process tree (its CPU is not read: NaN). */
export interface ExternalRun {
  ms: number;
  cpuS: number;
  peakBytes: number;
  idleBytes: number;
}

/** A command run once, timed, with the peak RSS of its process tree. */
export function external(cmd: string, args: string[]): Promise<ExternalRun> {
  const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const pid = child.pid ?? 0;
  const rss = sampleTree(pid, 50);
  const t0 = performance.now();
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      const ms = performance.now() - t0;
      const { before, peak } = rss.stop();
      if (code === 0) resolve({ ms, cpuS: Number.NaN, peakBytes: peak, idleBytes: before });
      else reject(new Error(`${cmd} exited ${String(code)}: ${stderr.slice(-500)}`));
    });
  });
}

/** ImageMagick's version line, or null when `convert` is not ImageMagick (or not installed). */
export function imageMagick(): Promise<string | null> {
  return new Promise((resolve) =>
    execFile('convert', ['-version'], (err, stdout) => resolve(!err && /^Version: ImageMagick/m.test(stdout) ? stdout.split('\n')[0] ?? '' : null)),
  );
}
