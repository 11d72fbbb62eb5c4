import fs from 'node:fs';
import { createRequire } from 'node:module';

export interface MediaBinaries {
  ffmpeg: string;
  ffprobe: string;
  /**
   * util-linux's setpriv, when this is Linux and it is installed: jobs are started through it
   * with a parent-death signal, so they die with the process that started them (see ffmpeg.ts).
   */
  setpriv?: string | null;
}

/** setpriv from util-linux (every Debian and Ubuntu has it), or null. */
function findSetpriv(): string | null {
  if (process.platform !== 'linux') return null;
  for (const p of ['/usr/bin/setpriv', '/bin/setpriv']) {
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return p;
    } catch {
      // try the next place
    }
  }
  return null;
}

function bundled(pkg: string): string {
  const require = createRequire(import.meta.url);
  const mod = require(pkg) as { path: string };
  // Install scripts may have been skipped (they only chmod); make the binary runnable ourselves.
  try {
    fs.accessSync(mod.path, fs.constants.X_OK);
  } catch {
    try {
      fs.chmodSync(mod.path, 0o755);
    } catch {
      // read-only install: the spawn will report it
    }
  }
  return mod.path;
}

/**
 * FFMPEG_PATH / FFPROBE_PATH pick another build (the distribution's, in production);
 * otherwise the binaries shipped in npm packages, so a fresh machine needs nothing else.
 */
export function resolveMediaBinaries(env: Record<string, string | undefined> = process.env): MediaBinaries {
  return {
    ffmpeg: env.FFMPEG_PATH || bundled('@ffmpeg-installer/ffmpeg'),
    ffprobe: env.FFPROBE_PATH || bundled('@ffprobe-installer/ffprobe'),
    setpriv: findSetpriv(),
  };
}
