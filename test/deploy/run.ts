// `npm run test:deploy`: CI's container stage (issue 36). Builds the images (a local Debian base,
// cached in /var/cache/toolrun-ci), starts deploy/compose.yaml with podman-compose and drives the
// service from the host (test/deploy/drive.ts), takes it down; the same with compose.s3.yaml on
// Ceph's RADOS Gateway; then with deploy/kubernetes/ under `podman kube play`; finally checks that
// the host is as it was before
// (containers, pods, networks, volumes, secrets, iptables, interfaces, ip_forward; see
// host-state.ts), after putting back what podman leaves. Cleans up on failure, SIGINT and SIGTERM.
// Needs root, podman 4.3, podman-compose, runc, catatonit, mmdebstrap, the dnsname CNI plugin and
// Ceph (.ci/run installs them). Not part of `npm test`, which needs no containers.
//
//   npm run test:deploy                      # all three
//   npm run test:deploy -- --only compose    # or s3, or kube
//   npm run test:deploy -- --report FILE     # the measurements as JSON, for docs/benchmarks.md
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { cephInstalled } from '../../scripts/ceph-gateway.js';
import { ComposeProject, networkGateway, PROJECT } from './compose.js';
import { drive } from './drive.js';
import { differences, restore, snapshot, type HostState } from './host-state.js';
import { makeCa, type RunCa } from './host-servers.js';
import { buildImages } from './images.js';
import { KUBE_PREFIXES, KubePlay } from './kube.js';
import { startS3 } from './s3.js';
import { asCleanup, exec, note, podman, stopCommands } from './podman.js';

const SCENARIOS = ['compose', 's3', 'kube'] as const;
const { values } = parseArgs({ options: { only: { type: 'string' }, report: { type: 'string' } } });
if (values.only && !(SCENARIOS as readonly string[]).includes(values.only)) {
  process.stderr.write(`--only takes one of ${SCENARIOS.join(', ')}\n`);
  process.exit(64);
}
const wanted = (scenario: (typeof SCENARIOS)[number]) => !values.only || values.only === scenario;

const began = Date.now();
let before: HostState | null = null;
const cleanups: (() => Promise<void>)[] = [];
let cleaning: Promise<void> | null = null;
let interrupted = false;

/**
 * Runs every registered clean-up once, last registered first, each one whatever the others do,
 * after stopping the commands under way (so nothing is made behind the clean-up's back).
 */
function cleanUp(): Promise<void> {
  cleaning ??= asCleanup(async () => {
    await stopCommands();
    for (const step of cleanups.reverse()) {
      try {
        await step();
      } catch (err) {
        note(`clean-up step failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  });
  return cleaning;
}

/** Cleans up and says whether the host is as it was; the exit status is the caller's. */
async function cleanUpAndCheck(): Promise<void> {
  await cleanUp();
  if (!before) return;
  const left = await asCleanup(() => settled(before!));
  process.stderr.write(left.length ? `# left on the host after cleaning up:\n${left.join('\n')}\n` : '# cleaned up: the host is as it was\n');
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    interrupted = true;
    note(`${signal}: stopping and cleaning up`);
    void cleanUpAndCheck().finally(() => process.exit(130));
  });
}

async function preflight(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('the deploy test needs root (podman with CNI networks, iptables)');
  for (const tool of ['podman', 'podman-compose', 'mmdebstrap', 'runc', 'catatonit', 'iptables-save']) {
    if ((await exec('sh', ['-c', `command -v ${tool}`])).code !== 0) throw new Error(`${tool} is not installed (.ci/run installs it)`);
  }
  if (wanted('s3') && !cephInstalled()) throw new Error("the S3 scenario needs Debian's ceph-mon, ceph-osd, radosgw and ceph-common (.ci/run installs them)");
}

async function main(): Promise<void> {
  await preflight();
  const initial = await snapshot();
  before = initial;
  cleanups.push(async () => {
    await restore(initial, [PROJECT, ...KUBE_PREFIXES]);
  });
  const report: Record<string, unknown> = {};
  const images = await buildImages();
  report.images = images;
  note(`images built (${Object.entries(images.seconds).map(([k, v]) => `${k} ${v.toFixed(0)} s`).join(', ')}); sizes ${Object.entries(images.sizes).map(([k, v]) => `${k} ${(v / 1e6).toFixed(0)} MB`).join(', ')}`);

  const ca: RunCa = await makeCa();
  cleanups.push(async () => fs.rmSync(ca.dir, { recursive: true, force: true }));

  // The compose file as it is: the shared data volume; a worker killed under a run.
  if (wanted('compose')) {
    const compose = new ComposeProject(PROJECT, ca.caFile);
    let down = false;
    const killed: string[] = [];
    cleanups.push(async () => {
      if (!down) await compose.down(killed);
    });
    const { stack, times } = await compose.up();
    const result = await drive(stack, ca);
    killed.push(stack.workers[0].name);
    down = true;
    const problems = await compose.down(killed);
    if (problems.length) throw new Error(`compose down:\n${problems.join('\n')}`);
    report.compose = { ...times, takeoverSeconds: result.takeoverSeconds };
    note(`${PROJECT}: down`);
  }

  // With compose.s3.yaml: Ceph's RADOS Gateway as S3, its keys from files (AWS_*_FILE).
  if (wanted('s3')) {
    const project = `${PROJECT}-s3`;
    // The network made beforehand (podman-compose uses one that exists), so that its address,
    // where the S3 endpoint is relayed to, is known before the containers are configured.
    await podman(['network', 'create', '--subnet', '10.89.218.0/24', `${project}_default`]);
    const s3 = await startS3(await networkGateway(`${project}_default`));
    cleanups.push(() => s3.stop());
    const compose = new ComposeProject(project, ca.caFile, {
      env: {
        TOOLRUN_STORAGE: s3.storage,
        TOOLRUN_S3_ENDPOINT: s3.endpoint,
        TOOLRUN_S3_ACCESS_KEY_ID_FILE: s3.accessKeyIdFile,
        TOOLRUN_S3_SECRET_ACCESS_KEY_FILE: s3.secretAccessKeyFile,
      },
      created: () => s3.relay(),
    });
    let down = false;
    cleanups.push(async () => {
      if (!down) await compose.down();
    });
    const { stack, times } = await compose.up();
    await drive(stack, ca, { killWorker: false, storageUrl: s3.endpoint });
    down = true;
    const problems = await compose.down();
    if (problems.length) throw new Error(`compose (S3) down:\n${problems.join('\n')}`);
    report.composeS3 = times;
    note(`${project}: down`);
  }

  // deploy/kubernetes under podman kube play, with the Chromium image.
  if (wanted('kube')) {
    const kube = new KubePlay();
    let down = false;
    cleanups.push(async () => {
      if (!down) await kube.down();
    });
    const { stack, times } = await kube.up(ca.caFile);
    const result = await drive(stack, ca);
    down = true;
    const problems = await kube.down();
    if (problems.length) throw new Error(`kube down:\n${problems.join('\n')}`);
    report.kube = { ...times, takeoverSeconds: result.takeoverSeconds };
    note('kube play: down');
  }

  await cleanUp();
  const left = await asCleanup(() => settled(initial));
  if (left.length) throw new Error(`the host is not as it was before the test:\n${left.join('\n')}`);
  report.totalSeconds = (Date.now() - began) / 1000;
  note(`host as before; the stage took ${(report.totalSeconds as number).toFixed(0)} s`);
  if (values.report) fs.writeFileSync(values.report, JSON.stringify(report, null, 2) + '\n');
}

/** The differences from `initial` once podman's helper processes have had time to exit (at most 20 s). */
async function settled(initial: HostState): Promise<string[]> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const left = differences(initial, await snapshot());
    if (!left.length || Date.now() > deadline) return left;
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** The end of each of our containers' logs, for a failed run's report. */
async function containerLogs(): Promise<void> {
  const names = (await exec('podman', ['ps', '-a', '--format', '{{.Names}}'])).stdout.split('\n').filter((n) => [PROJECT, ...KUBE_PREFIXES].some((p) => n.startsWith(p)));
  for (const name of names) {
    const r = await exec('podman', ['logs', '--tail', '30', name]);
    process.stderr.write(`\n# --- ${name} (last 30 lines)\n${r.stdout}${r.stderr}`);
  }
}

main().then(
  () => process.exit(0),
  async (err: unknown) => {
    // Stopped by a signal: its handler cleans up and exits.
    if (interrupted) return;
    process.stderr.write(`\n# deploy test FAILED: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    await containerLogs().catch(() => undefined);
    await cleanUpAndCheck();
    process.exit(1);
  },
);
