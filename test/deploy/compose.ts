// deploy/compose.yaml under podman-compose, as an operator starts it (plus CI's additions in
// test/deploy/compose.ci.yaml): up, the stack the drive needs, and down with nothing left.
// podman-compose 1.0 ignores `condition:` in depends_on, so readiness is polled here, and its
// `down` leaves the project's network, which is removed here.
import path from 'node:path';
import type { Stack, WorkerHandle } from './drive.js';
import { IMAGES } from './images.js';
import { exec, note, podman, podmanJson, ROOT, waitFor } from './podman.js';

export const PROJECT = 'toolrun-ci';
const API_PORTS = [8080, 8081];

export interface ComposeTimes {
  /** `up -d` to both API replicas answering /readyz (database made, migrated, demo team seeded). */
  upToReadySeconds: number;
  /** A stopped API container started again, to /healthz (the process alone). */
  restartToHealthySeconds: number;
}

/** The host's address on a podman network: where the containers reach the host. */
export async function networkGateway(network: string): Promise<string> {
  const [gateway] = (await podmanJson<{ subnets?: { gateway?: string }[] }[]>(['network', 'inspect', network]))
    .flatMap((n) => n.subnets ?? [])
    .map((s) => s.gateway)
    .filter((g): g is string => !!g);
  if (!gateway) throw new Error(`no gateway address for the network ${network}`);
  return gateway;
}

async function answers(url: string): Promise<true | undefined> {
  const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
  return res.ok ? true : undefined;
}

async function exitCode(name: string): Promise<number> {
  return Number((await podman(['inspect', '--format', '{{.State.ExitCode}}', name])).trim());
}

function worker(name: string): WorkerHandle {
  return {
    name,
    async stop() {
      // The compose file's stop_grace_period (45 s): time to hand running runs back.
      await podman(['stop', '--time', '45', name]);
      return exitCode(name);
    },
    async start() {
      await podman(['start', name]);
      await waitFor(`${name} started`, async () => ((await podman(['logs', name], { timeoutMs: 10_000 })).split('run worker started').length > 2 ? true : undefined), 60_000);
    },
    async kill() {
      await podman(['kill', '--signal', 'KILL', name]);
    },
    logs: () => podman(['logs', name]),
  };
}

/** Settings for deploy/compose.s3.yaml. */
export interface ComposeS3 {
  env: Record<string, string>;
  /** Called once the containers exist (and with them the network's bridge and its address). */
  created: () => Promise<void>;
}

/** One compose project of deploy/compose.yaml (with compose.s3.yaml when S3 is given). */
export class ComposeProject {
  private readonly network: string;
  private readonly env: Record<string, string>;

  constructor(
    readonly project: string,
    private readonly caFile: string,
    private readonly s3?: ComposeS3,
  ) {
    this.network = `${project}_default`;
    this.env = { TOOLRUN_IMAGE: IMAGES.app, TOOLRUN_POSTGRES_IMAGE: IMAGES.postgres, TOOLRUN_CI_CA_FILE: caFile, ...s3?.env };
  }

  private args(): string[] {
    const files = ['compose.yaml', ...(this.s3 ? ['compose.s3.yaml'] : [])].map((f) => path.join(ROOT, 'deploy', f));
    return ['-p', this.project, ...files.flatMap((f) => ['-f', f]), '-f', path.join(ROOT, 'test', 'deploy', 'compose.ci.yaml')];
  }

  private container(service: string): string {
    return `${this.project}_${service}_1`;
  }

  async up(): Promise<{ stack: Stack; times: ComposeTimes }> {
    const began = Date.now();
    const up = await exec('podman-compose', [...this.args(), 'up', '-d'], { cwd: path.join(ROOT, 'deploy'), env: this.env, timeoutMs: 300_000 });
    if (up.code !== 0) throw new Error(`podman-compose up exited ${up.code}:\n${up.stderr.slice(-3000)}`);
    await this.s3?.created();
    for (const port of API_PORTS) await waitFor(`API on :${port} ready`, () => answers(`http://127.0.0.1:${port}/readyz`), 180_000, 250);
    const upToReadySeconds = (Date.now() - began) / 1000;
    const migrate = await exitCode(this.container('migrate'));
    if (migrate !== 0) throw new Error(`the migrate job exited ${migrate}`);
    note(`${this.project}: up, both API replicas ready in ${upToReadySeconds.toFixed(1)} s`);

    // The process alone: a started container to a healthy one, the database already there.
    await podman(['stop', '--time', '45', this.container('api-2')]);
    const restarted = Date.now();
    await podman(['start', this.container('api-2')]);
    await waitFor('api-2 healthy again', () => answers(`http://127.0.0.1:${API_PORTS[1]}/healthz`), 60_000, 100);
    const restartToHealthySeconds = (Date.now() - restarted) / 1000;

    const stack: Stack = {
      name: this.project,
      apiUrls: API_PORTS.map((p) => `http://127.0.0.1:${p}`),
      gateway: await networkGateway(this.network),
      admin: (adminArgs) => podman(['exec', this.container('api-1'), 'toolrun', 'admin', ...adminArgs]),
      workers: [worker(this.container('worker-1')), worker(this.container('worker-2'))],
      browser: false,
    };
    return { stack, times: { upToReadySeconds, restartToHealthySeconds } };
  }

  /**
   * `down` as an operator runs it, with time for the graceful stop; every toolrun container must
   * have exited 0 on SIGTERM (`killed` aside). Then the network podman-compose 1.0 leaves.
   */
  async down(killed: string[] = []): Promise<string[]> {
    const problems: string[] = [];
    const names = (await exec('podman', ['ps', '-a', '--filter', `label=io.podman.compose.project=${this.project}`, '--format', '{{.Names}}'])).stdout.split('\n').filter(Boolean);
    // Stopped first by us, so each one's exit status is known before `down` removes it.
    for (const name of names.filter((n) => !n.includes('_db_'))) {
      const state = (await exec('podman', ['inspect', '--format', '{{.State.Status}}', name])).stdout.trim();
      if (state === 'running') await exec('podman', ['stop', '--time', '45', name]);
      const code = await exitCode(name).catch(() => -1);
      if (code !== 0 && !killed.includes(name)) problems.push(`${name} exited ${code}`);
    }
    const down = await exec('podman-compose', [...this.args(), 'down', '-v', '-t', '45'], { cwd: path.join(ROOT, 'deploy'), env: this.env, timeoutMs: 300_000 });
    if (down.code !== 0) problems.push(`podman-compose down exited ${down.code}: ${down.stderr.slice(-500)}`);
    if ((await exec('podman', ['network', 'exists', this.network])).code === 0) await exec('podman', ['network', 'rm', this.network]);
    return problems;
  }
}
