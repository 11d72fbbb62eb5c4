// The images the deploy test runs: a Debian 12 base made here with mmdebstrap (no registry is
// reachable from CI), cached outside the checkout and keyed by everything that makes it, then
// Toolrun's image (both targets) and the PostgreSQL image built on it.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { exec, note, podman, podmanExists, ROOT, run } from './podman.js';

export const CACHE_DIR = process.env.TOOLRUN_CI_CACHE_DIR || '/var/cache/toolrun-ci';
const SOURCES = '/etc/apt/sources.list.d/debian.sources';
// Fixed, so the same inputs make the same bytes (and podman the same image id).
const SOURCE_DATE_EPOCH = '1700000000';
// A week: the base picks up Debian's security updates at least that often.
const REFRESH_MS = 7 * 86_400_000;

/** What debian:bookworm-slim leaves out, so the local base is comparable with it. */
const MMDEBSTRAP_ARGS = [
  '--variant=minbase',
  '--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr',
  '--dpkgopt=path-exclude=/usr/share/doc/*',
  '--dpkgopt=path-include=/usr/share/doc/*/copyright',
  '--dpkgopt=path-exclude=/usr/share/man/*',
  '--dpkgopt=path-exclude=/usr/share/info/*',
  '--dpkgopt=path-exclude=/usr/share/locale/*',
  '--dpkgopt=path-exclude=/usr/share/lintian/*',
];

export const IMAGES = {
  app: 'localhost/toolrun-ci:latest',
  chromium: 'localhost/toolrun-ci-chromium:latest',
  postgres: 'localhost/toolrun-ci-postgres:15',
};

export interface BuiltImages {
  base: string;
  /** Seconds each step took, for the benchmarks section. */
  seconds: Record<string, number>;
  /** Bytes each image takes unpacked (as `podman images` counts). */
  sizes: Record<keyof typeof IMAGES, number>;
  baseSize: number;
}

async function baseKey(): Promise<string> {
  const version = (await run('mmdebstrap', ['--version'])).trim();
  const sources = fs.existsSync(SOURCES) ? fs.readFileSync(SOURCES, 'utf8') : '';
  const period = Math.floor(Date.now() / REFRESH_MS);
  return createHash('sha256').update(JSON.stringify({ version, sources, args: MMDEBSTRAP_ARGS, SOURCE_DATE_EPOCH, period })).digest('hex').slice(0, 16);
}

/** The local base image: podman's copy if there is one, else from the cached tar, else made. */
async function baseImage(seconds: Record<string, number>): Promise<string> {
  const key = await baseKey();
  const tag = `localhost/toolrun-ci-base:${key}`;
  if (await podmanExists('image', tag)) return tag;
  // The build context: the tar and a Containerfile beside it, kept together in the cache.
  const context = path.join(CACHE_DIR, `base-${key}`);
  const tar = path.join(context, 'base.tar');
  if (!fs.existsSync(tar)) {
    note(`making the Debian base with mmdebstrap (${tar})`);
    fs.mkdirSync(context, { recursive: true });
    const started = Date.now();
    const tmp = `${tar}.tmp-${process.pid}`;
    try {
      await run('mmdebstrap', ['--quiet', ...MMDEBSTRAP_ARGS, 'bookworm', tmp, SOURCES], { env: { SOURCE_DATE_EPOCH }, timeoutMs: 900_000 });
      fs.renameSync(tmp, tar);
    } finally {
      fs.rmSync(tmp, { force: true });
    }
    seconds.mmdebstrap = (Date.now() - started) / 1000;
    // Older keys' bases are of no further use.
    for (const f of fs.readdirSync(CACHE_DIR)) {
      if (/^base-[0-9a-f]{16}$/.test(f) && f !== `base-${key}`) fs.rmSync(path.join(CACHE_DIR, f), { recursive: true, force: true });
    }
  }
  fs.writeFileSync(path.join(context, 'Containerfile'), 'FROM scratch\nADD base.tar /\nCMD ["bash"]\n');
  await podman(['build', '--quiet', '--timestamp', '0', '--tag', tag, context], { timeoutMs: 600_000 });
  return tag;
}

/**
 * Keeps podman's storage from growing run after run: bases of other keys are untagged, and
 * untagged images nothing is built on (earlier builds' final images, layers of old bases) go once
 * they are 8 days old, past the base's weekly refresh, so this week's build cache stays.
 */
async function pruneOldImages(currentBase: string): Promise<void> {
  const bases = (await podman(['images', '--format', '{{.Repository}}:{{.Tag}}', 'localhost/toolrun-ci-base'])).split('\n').filter(Boolean);
  for (const tag of bases.filter((t) => t !== currentBase)) await exec('podman', ['untag', tag]);
  await exec('podman', ['image', 'prune', '--force', '--filter', 'until=192h']);
}

async function imageSize(tag: string): Promise<number> {
  return Number((await podman(['image', 'inspect', '--format', '{{.Size}}', tag])).trim());
}

/**
 * Builds everything from the checkout at ROOT, with the machine's CA bundle as the build secret
 * (CI's machine reaches the npm registry through a TLS-intercepting proxy).
 */
export async function buildImages(): Promise<BuiltImages> {
  const seconds: Record<string, number> = {};
  let started = Date.now();
  const base = await baseImage(seconds);
  seconds.base = (Date.now() - started) / 1000;
  const bundle = '/etc/ssl/certs/ca-certificates.crt';
  const common = ['build', '--format', 'docker', '--build-arg', `BASE=${base}`, ...(fs.existsSync(bundle) ? ['--secret', `id=ca_bundle,src=${bundle}`] : [])];
  const builds: [keyof typeof IMAGES, string[]][] = [
    ['app', [...common, '--tag', IMAGES.app, ROOT]],
    ['chromium', [...common, '--target', 'chromium', '--tag', IMAGES.chromium, ROOT]],
    ['postgres', [...common, '--tag', IMAGES.postgres, path.join(ROOT, 'deploy', 'postgres')]],
  ];
  for (const [name, args] of builds) {
    note(`building ${IMAGES[name]}`);
    started = Date.now();
    const r = await exec('podman', args, { timeoutMs: 1_800_000 });
    if (r.code !== 0) throw new Error(`podman ${args.join(' ')} failed:\n${(r.stdout + r.stderr).split('\n').slice(-30).join('\n')}`);
    seconds[name] = (Date.now() - started) / 1000;
  }
  await pruneOldImages(base);
  return {
    base,
    seconds,
    sizes: { app: await imageSize(IMAGES.app), chromium: await imageSize(IMAGES.chromium), postgres: await imageSize(IMAGES.postgres) },
    baseSize: await imageSize(base),
  };
}
