/**
 * The API exactly as `npm start` runs it: `scripts/build.js` (the prestart step), then the start
 * script's own command line (`node [V8 flags] bin/toolrun.js serve`, read from package.json) as
 * its own process, which runs the compiled dist/ when it matches the sources. Used by
 * bench/http.ts to read the idle RSS a deployment gets; bench/server.ts runs the sources through
 * tsx instead (what tests and development use).
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freshBuild } from '../../scripts/build-state.js';
import { freePort } from '../../src/service/serve.js';
import { procRssBytes } from './upload-io.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface NpmStartRss {
  /** Whether bin/toolrun.js ran the compiled build (false: the sources through tsx). */
  compiled: boolean;
  /** What node ran: the start script's arguments after `node`. */
  args: string[];
  /** VmRSS after the warm-up requests and a settling pause, in bytes. */
  rssBytes: number;
}

/** The arguments `npm start` gives node; its script must be a plain `node ...` command line. */
export function npmStartArgs(): string[] {
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
  const script = pkg.scripts?.start ?? '';
  const [command, ...args] = script.trim().split(/\s+/);
  if (command !== 'node' || !args.some((a) => a.endsWith('toolrun.js'))) {
    throw new Error(`the start script is "${script}"; bench/lib/npm-start.ts runs only \`node [flags] bin/toolrun.js ...\``);
  }
  return args;
}

/** Starts `toolrun serve` (with its in-process workers, as `npm start` does), warms it, reads its RSS. */
export async function npmStartIdleRss(opts: { databaseUrl: string; key: string; requests: number; settleMs: number }): Promise<NpmStartRss> {
  const build = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'build.js')], { cwd: ROOT, encoding: 'utf8' });
  if (build.status !== 0) throw new Error(`scripts/build.js failed: ${build.stderr}`);
  const compiled = freshBuild(ROOT) !== null;
  const port = await freePort('127.0.0.1');
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME };
  const args = npmStartArgs();
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: {
      ...env,
      DATABASE_URL: opts.databaseUrl,
      HOST: '127.0.0.1',
      PORT: String(port),
      LOG_LEVEL: 'warn',
      TOOLRUN_ENV: 'development',
      TOOLRUN_DEMO_SEED: '0',
      TOOLRUN_DATA_DIR: path.join(os.tmpdir(), 'toolrun-bench-npm-start'),
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const url = `http://127.0.0.1:${port}`;
  try {
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`toolrun serve exited ${child.exitCode}: ${stderr}`);
      const ok = await fetch(`${url}/healthz`).then((r) => r.status === 200, () => false);
      if (ok) break;
      if (Date.now() > deadline) throw new Error(`toolrun serve did not answer in 60 s: ${stderr}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const headers = { authorization: `Bearer ${opts.key}` };
    const concurrency = 10;
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next++ < opts.requests) await fetch(`${url}/v1/me`, { headers }).then((r) => r.arrayBuffer());
      }),
    );
    await new Promise((r) => setTimeout(r, opts.settleMs));
    const rssBytes = procRssBytes(child.pid ?? -1);
    if (rssBytes === null) throw new Error('could not read the RSS of toolrun serve from /proc');
    return { compiled, args, rssBytes };
  } finally {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
    if (child.exitCode === null) child.kill('SIGKILL');
  }
}
