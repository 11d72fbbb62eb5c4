/**
 * `npm run bench:containers`: the container images' sizes and how soon what they run is healthy
 * (issue 36). Not a test: it runs the deploy test (`test/deploy/run.ts --report`, all three
 * passes, so it needs what that needs: root, podman, podman-compose, mmdebstrap, Ceph) and turns its
 * measurements into figures, then measures each image compressed as a registry would hold it
 * (`podman push` to an OCI directory with gzip). Images and the base stay cached for the next run.
 *
 * Figures: unpacked sizes against the issue's targets (450 MB without a browser, 800 MB with
 * Chromium), each with the part that is Debian, its ffmpeg and Node.js as the baseline; compressed
 * sizes; `compose up` to both API processes ready; an API container's restart to healthy; `kube
 * play` to both API pods ready; a killed worker's run finished by the other; the stage's time.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { exec, podman } from '../test/deploy/podman.js';
import { IMAGES } from '../test/deploy/images.js';
import { figure, finish, loadNote, resultHeader, runBench, type BenchResult, type Figure } from './lib/report.js';

const MB = 1e6;

interface DeployReport {
  images: { base: string; seconds: Record<string, number>; sizes: Record<'app' | 'chromium' | 'postgres', number>; baseSize: number };
  compose: { upToReadySeconds: number; restartToHealthySeconds: number; takeoverSeconds: number };
  composeS3: { upToReadySeconds: number; restartToHealthySeconds: number };
  kube: { playToReadySeconds: number; takeoverSeconds: number };
  totalSeconds: number;
}

function runDeployTest(reportFile: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/deploy/run.ts', '--report', reportFile], { stdio: 'inherit' });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`the deploy test exited ${code}`))));
  });
}

/** Bytes of an image's layers gzipped, as a registry stores them and a pull downloads them. */
async function compressedSize(image: string): Promise<number> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-bench-oci-'));
  try {
    await podman(['push', '--quiet', '--compression-format', 'gzip', image, `oci:${dir}:image`]);
    const blobs = path.join(dir, 'blobs', 'sha256');
    return fs.readdirSync(blobs).reduce((sum, f) => sum + fs.statSync(path.join(blobs, f)).size, 0);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The image's layers below Toolrun's own, in bytes: all but the two newest that hold anything
 * (the Containerfile ends with node_modules, then Toolrun's files), i.e. the Debian base, the apt
 * layer (ffmpeg, tini) and Node.js.
 */
async function systemPart(image: string): Promise<number> {
  const history = JSON.parse(await podman(['history', '--format', 'json', image])) as { size: number }[];
  const sizes = history.map((h) => h.size).filter((n) => n > 0);
  return sizes.slice(2).reduce((sum, n) => sum + n, 0);
}

async function main(): Promise<void> {
  const before = loadNote();
  const reportFile = path.join(os.tmpdir(), `toolrun-bench-containers-${process.pid}.json`);
  await runDeployTest(reportFile);
  const r = JSON.parse(fs.readFileSync(reportFile, 'utf8')) as DeployReport;
  fs.rmSync(reportFile, { force: true });
  const compressed = { app: await compressedSize(IMAGES.app), chromium: await compressedSize(IMAGES.chromium) };
  const debianVersion = (await exec('podman', ['run', '--rm', '--network', 'none', '--no-healthcheck', '--entrypoint', 'cat', IMAGES.app, '/etc/debian_version'])).stdout.trim();
  const system = await systemPart(IMAGES.app);
  const figures: Figure[] = [
    figure({ name: 'image_app_mb', figure: 'image without a browser, unpacked', unit: 'MB', value: r.images.sizes.app / MB, baseline: { label: 'Debian + its ffmpeg + Node.js layers', value: system / MB }, target: { on: 'value', op: '<', limit: 450 } }),
    figure({ name: 'image_chromium_mb', figure: 'image with Chromium (--target chromium), unpacked', unit: 'MB', value: r.images.sizes.chromium / MB, baseline: { label: 'image without a browser', value: r.images.sizes.app / MB }, target: { on: 'value', op: '<', limit: 800 } }),
    figure({ name: 'image_app_gz_mb', figure: 'image without a browser, compressed (gzip layers, as pulled)', unit: 'MB', value: compressed.app / MB }),
    figure({ name: 'image_chromium_gz_mb', figure: 'image with Chromium, compressed', unit: 'MB', value: compressed.chromium / MB }),
    figure({ name: 'image_postgres_mb', figure: "PostgreSQL image (deploy/postgres, Debian's PostgreSQL 15), unpacked", unit: 'MB', value: r.images.sizes.postgres / MB }),
    figure({ name: 'compose_up_ready_s', figure: '`podman-compose up -d` to both API processes answering /readyz (PostgreSQL created, migrated, demo team seeded)', unit: 's', value: r.compose.upToReadySeconds }),
    figure({ name: 'api_restart_healthy_s', figure: 'an API container started again to /healthz (the database already there)', unit: 's', value: r.compose.restartToHealthySeconds }),
    figure({ name: 'kube_play_ready_s', figure: '`podman kube play` (PostgreSQL, migrate pod, API pods) to both API pods answering /readyz', unit: 's', value: r.kube.playToReadySeconds }),
    figure({ name: 'takeover_s', figure: "a worker killed (SIGKILL) mid-run to the run's success on the other worker (compose)", unit: 's', value: r.compose.takeoverSeconds, note: 'lease 6 s in CI' }),
    figure({ name: 'stage_s', figure: 'the whole deploy test (images from cache, three passes, clean-up checked)', unit: 's', value: r.totalSeconds, target: { on: 'value', op: '<', limit: 600 } }),
  ];
  const result: BenchResult = {
    ...resultHeader('containers', 'image sizes and start-to-healthy times of the container stack (issue 36)',
      { before, after: loadNote() }, { server: 'PostgreSQL 15 in a container (deploy/postgres)', version: null }, { base: r.images.base, debian: debianVersion }),
    figures,
    charts: [],
    notes: [
      'Sizes: `podman image inspect --format {{.Size}}` (the unpacked layers, what `podman images` shows); compressed: the layers gzipped by `podman push` into an OCI directory.',
      "Baseline of the first size: the image's layers below Toolrun's (the Debian base made with mmdebstrap like debian:bookworm-slim, Debian's ffmpeg and tini with the libraries they link, Node.js): what any image with Debian's ffmpeg and Node.js holds.",
      `Build times this run (cached layers count): ${Object.entries(r.images.seconds).map(([k, v]) => `${k} ${v.toFixed(0)} s`).join(', ')}.`,
      'Times: wall clock from the host, polling every 250 ms (100 ms for the restart); the machine is shared (see the load).',
      `Also: compose with compose.s3.yaml (Ceph RGW) up to ready ${r.composeS3.upToReadySeconds.toFixed(1)} s; under kube play the takeover took ${r.kube.takeoverSeconds.toFixed(1)} s.`,
    ],
    details: r,
  };
  finish(result);
}

runBench('containers', main);
