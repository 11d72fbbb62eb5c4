// deploy/kubernetes/ under `podman kube play` (podman 4.3): what it can run of the manifests. It
// knows Pods, Deployments (one pod per replica), PersistentVolumeClaims and ConfigMaps (envFrom);
// so the play files are the manifests with these changes, each one what podman 4.3 lacks:
// - a Job runs as a Pod with the same spec (no Job kind);
// - Secret volumes are host directories holding the Secret's keys (4.3 crashes on secret volumes);
// - Services are left out: the database is reached through a network alias of the same name,
//   the API replicas at fixed addresses (the host reaches pods on the network's bridge);
// - container ports are left out (4.3 publishes every containerPort on the host's own port);
// - images are the ones built here; the ConfigMap gets CI's settings (the CA of the webhook
//   receiver, private addresses allowed, a short lease, the public URL of the first replica).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import type { Stack, WorkerHandle } from './drive.js';
import { IMAGES } from './images.js';
import { exec, note, podman, ROOT, waitFor } from './podman.js';

export const KUBE_NETWORK = 'toolrun-ci-kube';
const SUBNET_PREFIX = '10.89.217';
const API_IPS = [`${SUBNET_PREFIX}.10`, `${SUBNET_PREFIX}.11`];
/** Names kube play gives what it makes from the manifests, for the clean-up. */
export const KUBE_PREFIXES = [KUBE_NETWORK, 'toolrun-postgres-pod-', 'toolrun-api-pod-', 'toolrun-worker-pod-', 'toolrun-migrate', 'toolrun-pgdata', 'toolrun-data', 'toolrun-tmp'];
const MANIFESTS = ['config.yaml', 'secret.yaml', 'postgres.yaml', 'storage.yaml', 'migrate-job.yaml', 'api.yaml', 'worker.yaml'];

type Doc = { kind: string; metadata: { name: string }; [key: string]: unknown };
type Spec = { containers: Container[]; volumes?: Volume[]; [key: string]: unknown };
type Container = { image: string; ports?: unknown; [key: string]: unknown };
type Volume = { name: string; secret?: unknown; hostPath?: unknown; [key: string]: unknown };

export interface KubeTimes {
  /** First play to both API replicas answering /readyz (database, migrate pod, API pods). */
  playToReadySeconds: number;
}

function podSpec(doc: Doc): Spec | null {
  const spec = doc.spec as ({ template?: { spec?: Spec } } & Partial<Spec>) | undefined;
  if (!spec) return null;
  return spec.template?.spec ?? (spec.containers ? (spec as Spec) : null);
}

/** The manifests, changed for podman 4.3 as the file's header says; by kind and name. */
function playDocuments(secretDir: string, caFile: string): Map<string, Doc> {
  const docs = new Map<string, Doc>();
  for (const file of MANIFESTS) {
    for (const parsed of parseAllDocuments(fs.readFileSync(path.join(ROOT, 'deploy', 'kubernetes', file), 'utf8'))) {
      const doc = parsed.toJS() as Doc;
      if (doc) docs.set(`${doc.kind}/${doc.metadata.name}`, doc);
    }
  }
  const secret = docs.get('Secret/toolrun-secrets') as Doc & { stringData?: Record<string, string>; data?: Record<string, string> };
  for (const [key, value] of Object.entries(secret.stringData ?? {})) fs.writeFileSync(path.join(secretDir, key), value, { mode: 0o644 });
  for (const [key, value] of Object.entries(secret.data ?? {})) fs.writeFileSync(path.join(secretDir, key), Buffer.from(value, 'base64'), { mode: 0o644 });
  fs.copyFileSync(caFile, path.join(secretDir, 'ci-ca.pem'));
  fs.chmodSync(path.join(secretDir, 'ci-ca.pem'), 0o644);

  const config = docs.get('ConfigMap/toolrun-config') as Doc & { data: Record<string, string> };
  Object.assign(config.data, {
    PUBLIC_BASE_URL: `http://${API_IPS[0]}:8080`,
    TOOLRUN_ALLOW_PRIVATE_NETWORK: '1',
    NODE_EXTRA_CA_CERTS: '/run/secrets/toolrun/ci-ca.pem',
    TOOLRUN_LEASE_SECONDS: '6',
  });
  for (const doc of docs.values()) {
    const spec = podSpec(doc);
    if (!spec) continue;
    for (const c of spec.containers) {
      c.image = c.image === 'localhost/toolrun:latest' ? IMAGES.chromium : c.image === 'localhost/toolrun-postgres:15' ? IMAGES.postgres : c.image;
      delete c.ports;
      for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe']) {
        const get = (c[probe] as { httpGet?: { port: unknown } } | undefined)?.httpGet;
        if (get && get.port === 'http') get.port = 8080;
      }
    }
    for (const v of spec.volumes ?? []) {
      if (v.secret) {
        delete v.secret;
        v.hostPath = { path: secretDir, type: 'Directory' };
      }
    }
  }
  const job = docs.get('Job/toolrun-migrate');
  if (job) {
    docs.delete('Job/toolrun-migrate');
    const template = (job.spec as { template: { metadata: Record<string, unknown>; spec: Spec } }).template;
    docs.set('Pod/toolrun-migrate', { apiVersion: 'v1', kind: 'Pod', metadata: { ...template.metadata, name: 'toolrun-migrate' }, spec: template.spec });
  }
  for (const key of [...docs.keys()]) if (key.startsWith('Service/') || key.startsWith('Secret/')) docs.delete(key);
  return docs;
}

function worker(pod: string): WorkerHandle {
  const name = `${pod}-worker`;
  return {
    name,
    async stop() {
      await podman(['stop', '--time', '60', name]);
      return Number((await podman(['inspect', '--format', '{{.State.ExitCode}}', name])).trim());
    },
    async start() {
      await podman(['start', name]);
      await waitFor(`${name} started`, async () => ((await podman(['logs', name])).split('run worker started').length > 2 ? true : undefined), 60_000);
    },
    async kill() {
      await podman(['kill', '--signal', 'KILL', name]);
    },
    logs: () => podman(['logs', name]),
  };
}

async function answers(url: string): Promise<true | undefined> {
  const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
  return res.ok ? true : undefined;
}

export class KubePlay {
  private readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-deploy-kube-'));
  private readonly files: string[] = [];

  /** Writes one play file of the given documents (the ConfigMap always with them) and plays it. */
  private async play(name: string, docs: Doc[], opts: { alias?: string; ips?: string[] } = {}): Promise<void> {
    const file = path.join(this.dir, `${name}.yaml`);
    fs.writeFileSync(file, docs.map((d) => stringify(d)).join('---\n'));
    this.files.push(file);
    const network = opts.alias ? `${KUBE_NETWORK}:alias=${opts.alias}` : KUBE_NETWORK;
    const ips = (opts.ips ?? []).flatMap((ip) => ['--ip', ip]);
    const r = await exec('podman', ['kube', 'play', '--network', network, ...ips, file], { timeoutMs: 300_000 });
    if (r.code !== 0) throw new Error(`podman kube play ${name} exited ${r.code}:\n${r.stderr.slice(-3000)}`);
  }

  async up(caFile: string): Promise<{ stack: Stack; times: KubeTimes }> {
    const secretDir = path.join(this.dir, 'secrets');
    fs.mkdirSync(secretDir, { mode: 0o755 });
    fs.chmodSync(this.dir, 0o755);
    const docs = playDocuments(secretDir, caFile);
    const get = (key: string): Doc => {
      const doc = docs.get(key);
      if (!doc) throw new Error(`deploy/kubernetes has no ${key}`);
      return doc;
    };
    const config = get('ConfigMap/toolrun-config');
    const began = Date.now();
    await podman(['network', 'create', '--subnet', `${SUBNET_PREFIX}.0/24`, KUBE_NETWORK]);
    await this.play('postgres', [config, get('PersistentVolumeClaim/toolrun-pgdata'), get('Deployment/toolrun-postgres')], { alias: 'toolrun-postgres' });
    await waitFor('PostgreSQL ready', async () => ((await exec('podman', ['exec', 'toolrun-postgres-pod-0-postgres', 'pg_isready', '-q', '-h', '127.0.0.1'])).code === 0 ? true : undefined), 120_000);
    await this.play('migrate', [config, get('Pod/toolrun-migrate')]);
    await waitFor('the migrate pod to finish', async () => {
      const state = (await podman(['inspect', '--format', '{{.State.Status}} {{.State.ExitCode}}', 'toolrun-migrate-migrate'])).trim();
      return state === 'exited 0' ? true : undefined;
    }, 180_000);
    await this.play('api', [config, get('PersistentVolumeClaim/toolrun-data'), get('Deployment/toolrun-api')], { ips: API_IPS });
    for (const ip of API_IPS) await waitFor(`API at ${ip} ready`, () => answers(`http://${ip}:8080/readyz`), 180_000, 250);
    const playToReadySeconds = (Date.now() - began) / 1000;
    await this.play('worker', [config, get('Deployment/toolrun-worker')]);
    const workers: [WorkerHandle, WorkerHandle] = [worker('toolrun-worker-pod-0'), worker('toolrun-worker-pod-1')];
    for (const w of workers) await waitFor(`${w.name} started`, async () => ((await w.logs()).includes('run worker started') ? true : undefined), 120_000);
    note(`kube play: database, migrate pod, two API pods ready in ${playToReadySeconds.toFixed(1)} s; two worker pods started`);
    const stack: Stack = {
      name: 'kube',
      apiUrls: API_IPS.map((ip) => `http://${ip}:8080`),
      gateway: `${SUBNET_PREFIX}.1`,
      admin: (args) => podman(['exec', 'toolrun-api-pod-0-api', 'toolrun', 'admin', ...args]),
      workers,
      browser: true,
    };
    return { stack, times: { playToReadySeconds } };
  }

  /** `podman kube down` of every play file (last first), then the claims' volumes and the network. */
  async down(): Promise<string[]> {
    const problems: string[] = [];
    for (const file of [...this.files].reverse()) {
      const r = await exec('podman', ['kube', 'down', file], { timeoutMs: 300_000 });
      if (r.code !== 0) problems.push(`podman kube down ${path.basename(file)} exited ${r.code}: ${r.stderr.trim().slice(-300)}`);
    }
    for (const volume of ['toolrun-pgdata', 'toolrun-data']) {
      if ((await exec('podman', ['volume', 'exists', volume])).code === 0) await exec('podman', ['volume', 'rm', volume]);
    }
    if ((await exec('podman', ['network', 'exists', KUBE_NETWORK])).code === 0) await exec('podman', ['network', 'rm', KUBE_NETWORK]);
    fs.rmSync(this.dir, { recursive: true, force: true });
    return problems;
  }
}
