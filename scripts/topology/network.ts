// The hosts of the scale-out topology. Where the machine allows (Linux, root, iproute2), every
// host is its own network namespace with one veth on a private bridge, so the processes share
// nothing but what they reach over that network. Otherwise every host is the loopback interface of
// this machine, and the caller is told why.
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import os from 'node:os';

export interface Host {
  name: string;
  /** The network namespace the host's processes run in; null on loopback. */
  ns: string | null;
  /** Where the host's services listen and are reached. */
  ip: string;
}

export interface Network {
  mode: 'netns' | 'loopback';
  /** Why the loopback fallback was taken (empty in netns mode). */
  reason: string;
  /** The address of this (root) side on the bridge: what hosts use to reach us. */
  gatewayIp: string;
  hosts: Host[];
  host(name: string): Host;
  /** The command line that runs `cmd args` on the host. */
  command(host: Host, cmd: string, args: string[]): { cmd: string; args: string[] };
  /** Removes namespaces and links; safe to call more than once. */
  destroy(): Promise<void>;
  /** The same, synchronously, for process exit handlers. */
  destroySync(): void;
}

// Interface names are at most 15 bytes: "trb-<pid base 36>-<4 hex>" fits, and names our links so a
// later run can tell whose they were.
const PREFIX = 'toolrun';

function ip(args: string[], timeoutMs = 10_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('ip', args, { timeout: timeoutMs }, (err, stdout, stderr) => {
      if (err) reject(new Error(`ip ${args.join(' ')}: ${String(stderr).trim() || err.message}`));
      else resolve(String(stdout));
    });
  });
}

function ipSync(args: string[]): string {
  try {
    return execFileSync('ip', args, { stdio: ['ignore', 'pipe', 'ignore'], timeout: 10_000 }).toString();
  } catch {
    return '';
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Why namespaces cannot be used here, or null when they can be tried. */
function unsupported(): string | null {
  if (process.platform !== 'linux') return `network namespaces need Linux (this is ${process.platform})`;
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return 'network namespaces need root';
  try {
    execFileSync('ip', ['-V'], { stdio: 'ignore', timeout: 5000 });
  } catch {
    return 'the `ip` command (iproute2) is not installed';
  }
  return null;
}

/**
 * Removes namespaces and bridges an earlier run of this module left behind when it was killed
 * before it could clean up: those whose owner pid (in their name) is gone. Processes still inside
 * such a namespace were started by that run; they are SIGKILLed by pid.
 */
export async function sweepStale(): Promise<string[]> {
  if (unsupported()) return [];
  const removed: string[] = [];
  for (const line of (await ip(['netns', 'list']).catch(() => '')).split('\n')) {
    const name = line.split(' ')[0] ?? '';
    const m = new RegExp(`^${PREFIX}-(\\d+)-[0-9a-f]{4}-`).exec(name);
    if (!m || pidAlive(Number(m[1]))) continue;
    for (const pid of (await ip(['netns', 'pids', name]).catch(() => '')).split('\n').map(Number)) {
      if (pid > 0) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone already
        }
      }
    }
    await ip(['netns', 'del', name]).catch(() => undefined);
    removed.push(name);
  }
  for (const line of (await ip(['-o', 'link', 'show']).catch(() => '')).split('\n')) {
    const m = /^\d+:\s+(tr[bv]-([0-9a-z]{1,5})-[0-9a-f]{4}\d?)[@:]/.exec(line);
    if (!m || !m[1] || pidAlive(parseInt(m[2] ?? '', 36))) continue;
    await ip(['link', 'del', m[1]]).catch(() => undefined);
    removed.push(m[1]);
  }
  return removed;
}

/** A /24 under 10.0.0.0/8 that no route of this machine uses yet. */
function freeSubnet(): string {
  const routes = ipSync(['-4', 'route', 'show', 'table', 'all']) + ipSync(['-4', 'addr']);
  for (let i = 0; i < 50; i++) {
    const net = `10.${randomInt(200, 250)}.${randomInt(1, 255)}`;
    if (!routes.includes(`${net}.`)) return net;
  }
  throw new Error('no free 10.x.y.0/24 subnet found');
}

function loopback(names: string[], reason: string): Network {
  const hosts = names.map((name) => ({ name, ns: null, ip: '127.0.0.1' }));
  return {
    mode: 'loopback',
    reason,
    gatewayIp: '127.0.0.1',
    hosts,
    host: (name) => mustFind(hosts, name),
    command: (_host, cmd, args) => ({ cmd, args }),
    destroy: async () => undefined,
    destroySync: () => undefined,
  };
}

function mustFind(hosts: Host[], name: string): Host {
  const h = hosts.find((x) => x.name === name);
  if (!h) throw new Error(`no host ${name} in the topology`);
  return h;
}

/**
 * One host per name: a namespace each on a fresh bridge when possible, else loopback. `log` gets
 * one line saying which, and why when it falls back.
 */
export async function createNetwork(names: string[], opts: { forceLoopback?: boolean; log: (line: string) => void }): Promise<Network> {
  const why = opts.forceLoopback ? 'loopback requested' : unsupported();
  if (why) {
    opts.log(`network: ${why}; every process runs on this machine's loopback (127.0.0.1)`);
    return loopback(names, why);
  }
  const swept = await sweepStale();
  if (swept.length) opts.log(`network: removed leftovers of an earlier run: ${swept.join(', ')}`);

  const tag = `${process.pid.toString(36)}-${randomBytes(2).toString('hex')}`;
  const bridge = `trb-${tag}`;
  const subnet = freeSubnet();
  const gatewayIp = `${subnet}.1`;
  const hosts: Host[] = names.map((name, i) => ({ name, ns: `${PREFIX}-${process.pid}-${tag.split('-')[1]}-${name}`, ip: `${subnet}.${i + 2}` }));
  const veth = (i: number) => `trv-${tag}${i}`;
  let destroyed = false;

  const destroySync = () => {
    if (destroyed) return;
    destroyed = true;
    for (const h of hosts) if (h.ns) ipSync(['netns', 'del', h.ns]);
    hosts.forEach((_, i) => ipSync(['link', 'del', veth(i)]));
    ipSync(['link', 'del', bridge]);
  };
  const destroy = async () => {
    if (destroyed) return;
    destroyed = true;
    await Promise.all(hosts.map((h) => (h.ns ? ip(['netns', 'del', h.ns]).catch(() => undefined) : undefined)));
    await Promise.all(hosts.map((_, i) => ip(['link', 'del', veth(i)]).catch(() => undefined)));
    await ip(['link', 'del', bridge]).catch(() => undefined);
  };

  try {
    await ip(['link', 'add', bridge, 'type', 'bridge']);
    await ip(['addr', 'add', `${gatewayIp}/24`, 'dev', bridge]);
    await ip(['link', 'set', bridge, 'up']);
    for (const [i, h] of hosts.entries()) {
      const ns = h.ns as string;
      await ip(['netns', 'add', ns]);
      // The peer is created straight inside the namespace as its eth0.
      await ip(['link', 'add', veth(i), 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns]);
      await ip(['link', 'set', veth(i), 'master', bridge, 'up']);
      await ip(['-n', ns, 'addr', 'add', `${h.ip}/24`, 'dev', 'eth0']);
      await ip(['-n', ns, 'link', 'set', 'eth0', 'up']);
      await ip(['-n', ns, 'link', 'set', 'lo', 'up']);
      await ip(['-n', ns, 'route', 'add', 'default', 'via', gatewayIp]);
    }
  } catch (err) {
    await destroy();
    const reason = `could not set up network namespaces (${(err as Error).message.split('\n')[0]})`;
    opts.log(`network: ${reason}; every process runs on this machine's loopback (127.0.0.1)`);
    return loopback(names, reason);
  }
  opts.log(`network: ${hosts.length} network namespaces on bridge ${bridge} (${subnet}.0/24, this side ${gatewayIp}): ${hosts.map((h) => `${h.name}=${h.ip}`).join(', ')}`);
  return {
    mode: 'netns',
    reason: '',
    gatewayIp,
    hosts,
    host: (name) => mustFind(hosts, name),
    // `ip netns exec` execs the command after entering the namespace: the child's pid is its own.
    command: (host, cmd, args) => (host.ns ? { cmd: 'ip', args: ['netns', 'exec', host.ns, cmd, ...args] } : { cmd, args }),
    destroy,
    destroySync,
  };
}

/** The machine's name, for the summary. */
export function machine(): string {
  const cpus = os.cpus();
  return `${os.hostname()} (${cpus.length} x ${cpus[0]?.model.trim() ?? 'cpu'}, ${Math.round(os.totalmem() / 1024 ** 3)} GiB)`;
}
