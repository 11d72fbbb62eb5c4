// Starts the scale-out topology: 2 API processes (`toolrun serve --no-workers`) and 2 worker
// processes (`toolrun worker`), each on its own host, sharing one PostgreSQL and one
// S3-compatible server (s3rver, or the real S3 named by TEST_S3_ENDPOINT: test/helpers/s3-target.ts)
// and nothing else: no shared memory, no shared disk (each has its
// own data and temporary directories), only what they reach over the network. Beside them: an
// HTTPS webhook receiver and the brand test site the brand-kit runs read.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import selfsigned from 'selfsigned';
import { createDb, type Db } from '../../src/db/pool.js';
import { BrandSite } from '../../test/helpers/brand-site.js';
import { cliEnv } from '../../test/helpers/process.js';
import { startS3Target } from '../../test/helpers/s3-target.js';
import { startForwarder, type Forwarder } from './forwarder.js';
import { createNetwork, type Network } from './network.js';
import { killAllSync, ServiceProcess } from './processes.js';
import { WebhookSink } from './sink.js';

export const BUCKET = 'toolrun-topology';
/** Small parts so that every upload goes through several presigned part URLs (a real S3: its minimum). */
export const PART_SIZE = 16 * 1024;
const API_PORT = 8080;

export interface TopologyOptions {
  /** The database every process uses, as this process reaches it. Migrations are applied by the processes. */
  databaseUrl: string;
  /** Plain processes on loopback even where namespaces would work. */
  forceLoopback?: boolean;
  /** Runs each worker process works on at once. */
  workerConcurrency?: number;
  /** About one webhook delivery in this many has its first attempt answered 500 (0: none). */
  failFirstOneIn?: number;
  /** Seconds between webhook retries (the test-only schedule override). */
  retryDelays?: string;
  log: (line: string) => void;
}

export interface ApiProcess {
  name: string;
  /** Where clients reach it: the host's own address in namespace mode. */
  url: string;
  proc: ServiceProcess;
}

export interface Topology {
  network: Network;
  apis: ApiProcess[];
  workers: ServiceProcess[];
  s3Endpoint: string;
  /** The brand test site, as worker hosts reach it. */
  siteUrl: string;
  sink: WebhookSink;
  /** This process's own connection, for setting up teams and for the checks. */
  db: Db;
  /** SIGTERMs the four processes and waits (SIGKILL after graceMs); how each ended and when. */
  stopProcesses(graceMs: number): Promise<ProcessExit[]>;
  /** Stops everything and removes namespaces and files; safe to call more than once. */
  stop(): Promise<void>;
}

export interface ProcessExit {
  name: string;
  code: number | null;
  signal: NodeJS.Signals | null;
  ms: number;
}

async function makeCertificate(dir: string, ips: string[]): Promise<{ certFile: string; cert: string; key: string }> {
  const pems = await selfsigned.generate([{ name: 'commonName', value: 'toolrun-topology' }], {
    keySize: 2048,
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: true },
      { name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, ...[...new Set(ips)].map((ip) => ({ type: 7 as const, ip }))] },
    ],
  });
  const certFile = path.join(dir, 'cert.pem');
  fs.writeFileSync(certFile, pems.cert);
  return { certFile, cert: pems.cert, key: pems.private };
}

/** Starts everything; on failure stops what had started and rethrows. */
export async function startTopology(opts: TopologyOptions): Promise<Topology> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-topology-'));
  const cleanups: (() => Promise<void>)[] = [];
  let stopped = false;
  // Last resort when the process ends without stop(): no child or namespace outlives it.
  let network: Network | null = null;
  const onExit = () => {
    killAllSync();
    network?.destroySync();
    fs.rmSync(tmp, { recursive: true, force: true });
  };
  process.once('exit', onExit);

  const stop = async () => {
    if (stopped) return;
    stopped = true;
    for (const fn of cleanups.reverse()) await fn().catch((err: unknown) => opts.log(`cleanup: ${(err as Error).message}`));
    await network?.destroy();
    fs.rmSync(tmp, { recursive: true, force: true });
    process.off('exit', onExit);
  };

  try {
    network = await createNetwork(['api1', 'api2', 'worker1', 'worker2'], { forceLoopback: opts.forceLoopback ?? false, log: opts.log });
    const net = network;
    const gw = net.gatewayIp;
    const tls = await makeCertificate(tmp, ['127.0.0.1', gw]);

    const s3 = await startS3Target(BUCKET, { address: gw });
    cleanups.push(() => s3.close());
    const partSize = Math.max(PART_SIZE, s3.minPartBytes);

    const db = createDb({ connectionString: opts.databaseUrl, logger: pino({ level: 'silent' }), max: 8, applicationName: 'toolrun-topology' });
    cleanups.push(() => db.close());

    // Namespaced hosts reach loopback-only servers through forwarders on the bridge address.
    const forwarders: Forwarder[] = [];
    cleanups.push(async () => {
      await Promise.all(forwarders.map((f) => f.close()));
    });
    const reach = async (host: string, port: number): Promise<{ host: string; port: number }> => {
      if (net.mode === 'loopback') return { host, port };
      const f = await startForwarder(gw, { host, port });
      forwarders.push(f);
      return { host: f.host, port: f.port };
    };
    const pgUrl = new URL(opts.databaseUrl);
    const pgAt = await reach(pgUrl.hostname, Number(pgUrl.port || 5432));
    // A real S3 on this machine's loopback is reached by namespaced hosts through a forwarder too.
    const s3Url = new URL(s3.endpoint);
    const s3At = s3.kind === 'real' && ['127.0.0.1', 'localhost'].includes(s3Url.hostname) ? await reach(s3Url.hostname, Number(s3Url.port)) : null;
    const s3Endpoint = s3At ? `http://${s3At.host}:${s3At.port}` : s3.endpoint;
    const servicePgUrl = new URL(opts.databaseUrl);
    servicePgUrl.hostname = pgAt.host;
    servicePgUrl.port = String(pgAt.port);

    const site = await new BrandSite().start();
    cleanups.push(() => site.close());
    const siteAt = await reach('127.0.0.1', site.port);

    const sink = await WebhookSink.start(gw, tls, opts.failFirstOneIn ?? 0);
    cleanups.push(() => sink.close());

    const base = cliEnv({
      TOOLRUN_ENV: 'test',
      DATABASE_URL: servicePgUrl.toString(),
      LOG_LEVEL: 'info',
      TOOLRUN_DEMO_SEED: 'false',
      TOOLRUN_STORAGE: `s3://${s3.bucket}/topology`,
      TOOLRUN_S3_ENDPOINT: s3Endpoint,
      TOOLRUN_PART_SIZE_BYTES: String(partSize),
      ...(partSize < 5 * 1024 * 1024 ? { TOOLRUN_S3_ALLOW_SMALL_PARTS: 'true' } : {}),
      AWS_ACCESS_KEY_ID: s3.credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.credentials.secretAccessKey,
      AWS_REGION: s3.region,
      // The webhook receiver and the brand site are on private addresses, with a private CA.
      TOOLRUN_ALLOW_PRIVATE_NETWORK: 'true',
      NODE_EXTRA_CA_CERTS: tls.certFile,
      TOOLRUN_WORKER_CONCURRENCY: String(opts.workerConcurrency ?? 2),
      TOOLRUN_WORKER_POLL_MS: '1000',
      TOOLRUN_WEBHOOK_RETRY_DELAYS: opts.retryDelays ?? '1,2,2,3,3',
      TOOLRUN_SHUTDOWN_GRACE_SECONDS: '5',
    });
    /** Own data and temporary directories per process: nothing shared on disk. */
    const own = (name: string) => {
      const dataDir = path.join(tmp, name, 'data');
      const tmpDir = path.join(tmp, name, 'tmp');
      fs.mkdirSync(dataDir, { recursive: true });
      fs.mkdirSync(tmpDir, { recursive: true });
      return { TOOLRUN_DATA_DIR: dataDir, TMPDIR: tmpDir };
    };

    const processes: ServiceProcess[] = [];
    const stopProcesses = (graceMs: number) =>
      Promise.all(
        processes.map(async (p): Promise<ProcessExit> => {
          const t = performance.now();
          const exit = await p.stop(graceMs);
          return { name: p.name, ...exit, ms: performance.now() - t };
        }),
      );
    cleanups.push(async () => {
      await stopProcesses(15_000);
    });
    const apiProcs = ['api1', 'api2'].map((name) => {
      const host = net.host(name);
      // In namespaces each API has its own address, so both use the same port, as two machines would.
      const port = net.mode === 'netns' ? API_PORT : 0;
      const env = { ...base, ...own(name), HOST: host.ip, PORT: String(port), ...(port ? { PUBLIC_BASE_URL: `http://${host.ip}:${port}` } : {}) };
      const proc = new ServiceProcess(name, host, net, ['serve', '--no-workers'], env);
      processes.push(proc);
      return proc;
    });
    const workers = ['worker1', 'worker2'].map((name) => {
      const proc = new ServiceProcess(name, net.host(name), net, ['worker'], { ...base, ...own(name) });
      processes.push(proc);
      return proc;
    });
    const [listening] = await Promise.all([
      Promise.all(apiProcs.map((p) => p.waitForLog('toolrun API listening', 120_000))),
      Promise.all(workers.map((p) => p.waitForLog('run worker started', 120_000))),
    ]);
    const apis = apiProcs.map((proc, i) => ({ name: proc.name, url: String(listening[i]?.url ?? ''), proc }));
    opts.log(
      `topology: ${apis.map((a) => `${a.name} ${a.url} (pid ${a.proc.pid})`).join(', ')}; ` +
        `${workers.map((w) => `${w.name} ${w.host.ip} (pid ${w.pid})`).join(', ')}; s3 ${s3Endpoint}; postgres via ${pgAt.host}:${pgAt.port}`,
    );
    return { network: net, apis, workers, s3Endpoint, siteUrl: `http://${siteAt.host}:${siteAt.port}`, sink, db, stopProcesses, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
