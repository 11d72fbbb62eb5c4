// A single-node Ceph cluster with its RADOS Gateway (radosgw), for running the S3 tests and the
// upload benchmark on a real S3 implementation: one monitor, one OSD on memstore, no manager,
// no cephx, size-1 pools, radosgw's beast frontend on a free 127.0.0.1 port, and one S3 user
// with known keys. Everything lives in a temporary directory; stop() ends the processes it
// started (by their PIDs) and removes the directory.
//
//   node --import tsx scripts/ceph-gateway.ts start [--out FILE]  (prints TEST_S3_* lines)
//   node --import tsx scripts/ceph-gateway.ts stop DIR
//
// Debian 12 packages: ceph-mon ceph-osd radosgw ceph-common.
import { execFile, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface Gateway {
  dir: string;
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  pids: number[];
  stop(): Promise<void>;
}

/** The binaries this needs, all from Debian's ceph packages. */
export const CEPH_BINARIES = ['monmaptool', 'ceph-mon', 'ceph-osd', 'radosgw', 'radosgw-admin', 'ceph'];

export function cephInstalled(): boolean {
  const dirs = (process.env.PATH ?? '').split(':').concat('/usr/bin', '/usr/sbin');
  return CEPH_BINARIES.every((b) => dirs.some((d) => fs.existsSync(path.join(d, b))));
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

function config(dir: string, fsid: string, monPort: number, rgwPort: number): string {
  return `[global]
fsid = ${fsid}
mon host = [v2:127.0.0.1:${monPort}]
mon initial members = a
auth cluster required = none
auth service required = none
auth client required = none
auth supported = none
# Without this the client side (radosgw) insists on cephx with the monitor and retries forever.
ms mon client mode = crc secure
ms mon cluster mode = crc secure
ms mon service mode = crc secure
# radosgw creates seven pools on its first start, one map change each: propose them quickly.
paxos propose interval = 0.1
paxos min wait = 0.01
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon max pg per osd = 1000
osd crush chooseleaf type = 0
osd objectstore = memstore
memstore device bytes = ${4 * 1024 ** 3}
run dir = ${dir}/run
admin socket = ${dir}/run/$name.asok
log file = ${dir}/log/$name.log
pid file = ${dir}/run/$name.pid
keyring = ${dir}/keyring
err to stderr = false
log to stderr = false
mon data avail warn = 1
mon data avail crit = 0

[mon.a]
mon data = ${dir}/mon

[osd.0]
osd data = ${dir}/osd0

[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:${rgwPort}
rgw data = ${dir}/rgw
rgw dns name = 127.0.0.1
rgw enable usage log = false
# Deleted objects' tails are collected soon (default: after 2 hours), so a memory OSD does not fill up.
rgw gc obj min wait = 5
rgw gc processor period = 5
`;
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await check().catch(() => false)) return;
    await delay(100);
  }
  throw new Error(`ceph gateway: ${what} not ready after ${timeoutMs} ms`);
}

/** Running: exists and is not a zombie (a detached daemon ended is reaped by whoever adopted it, later). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** Ends the given processes (TERM, then KILL after a grace period) and removes the directory. */
export async function stopGateway(dir: string, pids: number[]): Promise<void> {
  for (const pid of [...pids].reverse()) {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      // already gone
    }
  }
  const until = Date.now() + 5000;
  while (pids.some(alive) && Date.now() < until) await delay(50);
  for (const pid of pids.filter(alive)) process.kill(pid, 'SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
}

/** Starts the cluster and gateway; detached processes survive this process (for the CLI). */
export async function startGateway(opts: { detached?: boolean; log?: (line: string) => void } = {}): Promise<Gateway> {
  const log = opts.log ?? (() => undefined);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-ceph-'));
  const pids: number[] = [];
  const stop = () => stopGateway(dir, pids);
  try {
    for (const sub of ['run', 'log', 'mon', 'osd0', 'rgw']) fs.mkdirSync(path.join(dir, sub));
    const [monPort, rgwPort] = [await freePort(), await freePort()];
    const conf = path.join(dir, 'ceph.conf');
    fs.writeFileSync(conf, config(dir, randomUUID(), monPort, rgwPort));
    fs.writeFileSync(path.join(dir, 'keyring'), '');
    const c = ['-c', conf];
    const started = Date.now();

    const daemon = (cmd: string, args: string[]): void => {
      const out = fs.openSync(path.join(dir, 'log', `${cmd}.out`), 'a');
      const child = spawn(cmd, [...args, '-f', ...c], { stdio: ['ignore', out, out], detached: opts.detached ?? false });
      fs.closeSync(out);
      if (!child.pid) throw new Error(`could not start ${cmd}`);
      pids.push(child.pid);
      fs.appendFileSync(path.join(dir, 'pids'), `${child.pid}\n`);
      if (opts.detached) child.unref();
    };

    await run('monmaptool', ['--create', '--addv', 'a', `[v2:127.0.0.1:${monPort}]`, '--fsid', readFsid(conf), path.join(dir, 'monmap')]);
    await run('ceph-mon', ['--mkfs', '-i', 'a', '--monmap', path.join(dir, 'monmap'), ...c]);
    daemon('ceph-mon', ['-i', 'a']);
    const ceph = (...args: string[]) => run('ceph', [...c, '--connect-timeout', '5', ...args], { timeout: 20_000 });
    await waitFor('monitor', async () => (await ceph('mon', 'stat')).stdout.includes('quorum'), 30_000);
    log(`monitor up after ${Date.now() - started} ms`);

    const osdUuid = randomUUID();
    await ceph('osd', 'new', osdUuid);
    await run('ceph-osd', ['-i', '0', '--mkfs', '--osd-uuid', osdUuid, ...c]);
    daemon('ceph-osd', ['-i', '0']);
    await waitFor('OSD', async () => /1 up/.test((await ceph('osd', 'stat')).stdout), 30_000);
    log(`OSD up after ${Date.now() - started} ms`);

    daemon('radosgw', ['-n', 'client.rgw']);
    const endpoint = `http://127.0.0.1:${rgwPort}`;
    await waitFor('radosgw', async () => (await fetch(endpoint)).status < 500, 60_000);
    log(`radosgw up after ${Date.now() - started} ms`);

    const accessKeyId = `TOOLRUN${randomBytes(6).toString('hex').toUpperCase()}`;
    const secretAccessKey = randomBytes(20).toString('hex');
    await run('radosgw-admin', [
      ...c, '-n', 'client.rgw', 'user', 'create', '--uid=toolrun', '--display-name=Toolrun tests',
      `--access-key=${accessKeyId}`, `--secret-key=${secretAccessKey}`,
    ]);
    log(`user created after ${Date.now() - started} ms`);
    return { dir, endpoint, accessKeyId, secretAccessKey, region: 'us-east-1', pids, stop };
  } catch (err) {
    const logs = fs.existsSync(path.join(dir, 'log')) ? fs.readdirSync(path.join(dir, 'log')) : [];
    const tail = logs.map((f) => `--- ${f}\n${fs.readFileSync(path.join(dir, 'log', f), 'utf8').split('\n').slice(-15).join('\n')}`).join('\n');
    await stop();
    throw new Error(`${(err as Error).message}\n${tail}`);
  }
}

function readFsid(conf: string): string {
  const m = /^fsid = (.+)$/m.exec(fs.readFileSync(conf, 'utf8'));
  if (!m?.[1]) throw new Error('no fsid in ceph.conf');
  return m[1];
}

/** The variables the S3 tests read to run against this gateway. */
export function gatewayEnv(g: Pick<Gateway, 'endpoint' | 'accessKeyId' | 'secretAccessKey' | 'region'>): Record<string, string> {
  return {
    TEST_S3_ENDPOINT: g.endpoint,
    TEST_S3_ACCESS_KEY_ID: g.accessKeyId,
    TEST_S3_SECRET_ACCESS_KEY: g.secretAccessKey,
    TEST_S3_REGION: g.region,
    // radosgw: the real 5 MiB minimum part size, and an empty <Message> in its errors.
    TEST_S3_MIN_PART_BYTES: String(5 * 1024 * 1024),
  };
}

async function main(): Promise<void> {
  const [cmd, ...rest] = process.argv.slice(2);
  if (cmd === 'start') {
    const g = await startGateway({ detached: true, log: (l) => console.error(`# ceph gateway: ${l}`) });
    const lines = Object.entries({ ...gatewayEnv(g), TEST_S3_GATEWAY_DIR: g.dir }).map(([k, v]) => `${k}=${v}`);
    const i = rest.indexOf('--out');
    if (i >= 0 && rest[i + 1]) fs.writeFileSync(rest[i + 1] as string, `${lines.join('\n')}\n`);
    console.log(lines.join('\n'));
  } else if (cmd === 'stop' && rest[0]) {
    const dir = rest[0];
    const pidFile = path.join(dir, 'pids');
    const pids = fs.existsSync(pidFile) ? fs.readFileSync(pidFile, 'utf8').split('\n').filter(Boolean).map(Number) : [];
    await stopGateway(dir, pids);
  } else {
    console.error('usage: ceph-gateway.ts start [--out FILE] | stop DIR');
    process.exit(2);
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err: unknown) => {
    console.error((err as Error).message);
    process.exit(1);
  });
}
