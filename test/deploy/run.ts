// `npm run test:deploy`: CI's container stage (issue 36). Builds the images (a local Debian base,
// cached in /var/cache/toolrun-ci), starts deploy/compose.yaml with podman-compose and drives the
// service from the host (test/deploy/drive.ts), takes it down, then does the same with
// deploy/kubernetes/ under `podman kube play`; finally checks that the host is as it was before
// (containers, pods, networks, volumes, secrets, iptables, interfaces, ip_forward; see
// host-state.ts), after putting back what podman leaves. Cleans up on failure, SIGINT and SIGTERM.
// Needs root, podman 4.3, podman-compose, runc, catatonit, mmdebstrap and the dnsname CNI plugin
// (.ci/run installs them). Not part of `npm test`, which needs no containers.
//
//   npm run test:deploy                      # both
//   npm run test:deploy -- --only compose    # or kube
//   npm run test:deploy -- --report FILE     # the measurements as JSON, for docs/benchmarks.md
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { composeDown, composeUp, PROJECT } from './compose.js';
import { drive } from './drive.js';
import { differences, restore, snapshot, type HostState } from './host-state.js';
import { makeCa, type RunCa } from './host-servers.js';
import { buildImages } from './images.js';
import { KUBE_PREFIXES, KubePlay } from './kube.js';
import { asCleanup, exec, note, stopCommands } from './podman.js';

const { values } = parseArgs({ options: { only: { type: 'string' }, report: { type: 'string' } } });
if (values.only && !['compose', 'kube'].includes(values.only)) {
  process.stderr.write('--only takes compose or kube\n');
  process.exit(64);
}

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

  if (values.only !== 'kube') {
    let down = false;
    const killed: string[] = [];
    cleanups.push(async () => {
      if (!down) await composeDown(ca.caFile, killed);
    });
    const { stack, times } = await composeUp(ca.caFile);
    const result = await drive(stack, ca);
    killed.push(stack.workers[0].name);
    down = true;
    const problems = await composeDown(ca.caFile, killed);
    if (problems.length) throw new Error(`compose down:\n${problems.join('\n')}`);
    report.compose = { ...times, takeoverSeconds: result.takeoverSeconds };
    note('compose: down');
  }

  if (values.only !== 'compose') {
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
