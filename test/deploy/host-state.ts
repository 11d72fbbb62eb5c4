// What running containers changes on the host, taken before the deploy test and compared after
// it: podman's containers, pods, networks, volumes and secrets; iptables rules and chains (CNI adds
// NAT, port forwarding and DNS rules and leaves its own chains behind); network interfaces (the
// bridges CNI makes); CNI's address stores and network files; the kernel's forwarding switches
// (CNI turns ip_forward on and never back off); podman's helper processes. `restore` takes back
// what podman left (only what was not there before, and only podman's and CNI's), then the test
// asserts that a fresh snapshot equals the first.
import fs from 'node:fs';
import path from 'node:path';
import { exec, note, run } from './podman.js';

const SYSCTLS = [
  'net/ipv4/ip_forward',
  'net/ipv4/conf/all/forwarding',
  'net/ipv6/conf/all/forwarding',
  'net/ipv4/conf/all/route_localnet',
  'net/ipv4/conf/default/route_localnet',
];
const TABLES = ['filter', 'nat', 'mangle', 'raw'];
const BUILT_IN = ['PREROUTING', 'INPUT', 'FORWARD', 'OUTPUT', 'POSTROUTING'];
const STATE_DIRS = ['/var/lib/cni/networks', '/etc/cni/net.d', '/run/containers/cni/dnsname'];
/** Processes that run for as long as a container or a network does. */
const HELPERS = ['conmon', 'dnsmasq', 'catatonit', 'rootlessport', 'ceph-mon', 'ceph-osd', 'radosgw'];

export interface HostState {
  sysctls: Record<string, string>;
  /** Table name -> rule lines (-A ...) and chain names, as iptables-save prints them (counters cut). */
  iptables: Record<string, { chains: string[]; rules: string[] }>;
  links: string[];
  stateFiles: string[];
  podman: Record<'containers' | 'pods' | 'networks' | 'volumes' | 'secrets', string[]>;
  helpers: string[];
}

async function podmanNames(args: string[]): Promise<string[]> {
  const r = await exec('podman', args);
  return r.code === 0 ? r.stdout.split('\n').map((s) => s.trim()).filter(Boolean).sort() : [];
}

async function iptables(): Promise<HostState['iptables']> {
  const out: HostState['iptables'] = {};
  for (const table of TABLES) {
    const r = await exec('iptables-save', ['-t', table]);
    const lines = r.code === 0 ? r.stdout.split('\n') : [];
    out[table] = {
      // "NAME POLICY" (policy "-" for a chain of one's own), so a changed policy shows too.
      chains: lines.filter((l) => l.startsWith(':')).map((l) => l.slice(1).split(' ').slice(0, 2).join(' ')).sort(),
      rules: lines.filter((l) => l.startsWith('-A ')).sort(),
    };
  }
  return out;
}

function listFiles(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { recursive: true, encoding: 'utf8' }).map((f) => path.join(dir, f));
}

async function helperProcesses(): Promise<string[]> {
  const out: string[] = [];
  for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const comm = fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
      if (HELPERS.includes(comm)) out.push(`${comm}[${pid}]`);
    } catch {
      // gone meanwhile
    }
  }
  return out.sort();
}

export async function snapshot(): Promise<HostState> {
  const sysctls: Record<string, string> = {};
  for (const name of SYSCTLS) {
    try {
      sysctls[name] = fs.readFileSync(`/proc/sys/${name}`, 'utf8').trim();
    } catch {
      // not on this kernel (IPv6 off)
    }
  }
  const links = (await run('ip', ['-o', 'link', 'show'])).split('\n').map((l) => l.split(':')[1]?.trim().split('@')[0] ?? '').filter(Boolean).sort();
  return {
    sysctls,
    iptables: await iptables(),
    links,
    stateFiles: STATE_DIRS.flatMap(listFiles).sort(),
    podman: {
      // --external: also the working containers of builds (a build stopped half-way leaves them).
      containers: await podmanNames(['ps', '-a', '--external', '--format', '{{.Names}}']),
      pods: await podmanNames(['pod', 'ps', '--format', '{{.Name}}']),
      networks: await podmanNames(['network', 'ls', '--format', '{{.Name}}']),
      volumes: await podmanNames(['volume', 'ls', '--format', '{{.Name}}']),
      secrets: await podmanNames(['secret', 'ls', '--format', '{{.Name}}']),
    },
    helpers: await helperProcesses(),
  };
}

const added = (before: string[], after: string[]) => after.filter((x) => !before.includes(x));

/** What differs between two snapshots, one line each; empty when they are the same. */
export function differences(before: HostState, after: HostState): string[] {
  const out: string[] = [];
  for (const [name, value] of Object.entries(after.sysctls)) {
    if (before.sysctls[name] !== value) out.push(`sysctl ${name}: ${before.sysctls[name]} -> ${value}`);
  }
  for (const table of TABLES) {
    const b = before.iptables[table] ?? { chains: [], rules: [] };
    const a = after.iptables[table] ?? { chains: [], rules: [] };
    // A table iptables had not loaded before shows up with its built-in chains, empty and open:
    // the same as no table.
    const loadedEmpty = (c: string) => / ACCEPT$/.test(c) && BUILT_IN.includes(c.split(' ')[0] ?? '');
    for (const c of added(b.chains, a.chains).filter((c) => !loadedEmpty(c))) out.push(`iptables -t ${table}: chain ${c} added`);
    for (const c of added(a.chains, b.chains)) out.push(`iptables -t ${table}: chain ${c} removed`);
    for (const r of added(b.rules, a.rules)) out.push(`iptables -t ${table}: rule added: ${r}`);
    for (const r of added(a.rules, b.rules)) out.push(`iptables -t ${table}: rule removed: ${r}`);
  }
  for (const l of added(before.links, after.links)) out.push(`network interface added: ${l}`);
  for (const f of added(before.stateFiles, after.stateFiles)) out.push(`file added: ${f}`);
  for (const kind of Object.keys(after.podman) as (keyof HostState['podman'])[]) {
    for (const n of added(before.podman[kind], after.podman[kind])) out.push(`podman ${kind.replace(/s$/, '')} left: ${n}`);
  }
  // Helper processes are compared by name and count: pids of ones that were there stay.
  for (const h of added(before.helpers, after.helpers)) out.push(`process left: ${h}`);
  return out;
}

/**
 * Takes back what podman and CNI left that the snapshot `before` did not have: podman objects
 * whose names start with one of `prefixes` and the working containers of builds that were
 * stopped half-way, CNI's iptables rules and chains, CNI's bridges and
 * veths, CNI's state files, and the forwarding switches. Anything else is left for the assertion.
 */
export async function restore(before: HostState, prefixes: string[]): Promise<void> {
  const now = await snapshot();
  const ours = (name: string) => prefixes.some((p) => name.startsWith(p));
  const buildLeftover = (name: string) => /working-container(-\d+)?$/.test(name);
  for (const c of added(before.podman.containers, now.podman.containers).filter((c) => ours(c) || buildLeftover(c))) {
    await exec('podman', ['rm', '-f', '-t', '0', c]);
  }
  for (const p of added(before.podman.pods, now.podman.pods).filter(ours)) await exec('podman', ['pod', 'rm', '-f', '-t', '0', p]);
  for (const v of added(before.podman.volumes, now.podman.volumes).filter(ours)) await exec('podman', ['volume', 'rm', '-f', v]);
  for (const s of added(before.podman.secrets, now.podman.secrets).filter(ours)) await exec('podman', ['secret', 'rm', s]);
  for (const n of added(before.podman.networks, now.podman.networks).filter(ours)) await exec('podman', ['network', 'rm', '-f', n]);

  const after = await snapshot();
  for (const table of TABLES) {
    const b = before.iptables[table] ?? { chains: [], rules: [] };
    const a = after.iptables[table] ?? { chains: [], rules: [] };
    const newChains = added(b.chains, a.chains).filter((c) => c.startsWith('CNI-')).map((c) => c.split(' ')[0] ?? '');
    const cni = (rule: string) => /CNI|cni-podman/.test(rule);
    // Rules in chains that go anyway need no deleting; the rest are deleted one by one.
    const newRules = added(b.rules, a.rules).filter((r) => cni(r) && !newChains.includes(r.split(' ')[1] ?? ''));
    if (!newRules.length && !newChains.length) continue;
    const script = [
      `*${table}`,
      ...newRules.map((r) => `-D${r.slice(2)}`),
      ...newChains.map((c) => `-F ${c}`),
      ...newChains.map((c) => `-X ${c}`),
      'COMMIT',
      '',
    ].join('\n');
    const r = await exec('iptables-restore', ['--noflush'], { input: script });
    if (r.code !== 0) note(`iptables-restore -t ${table} failed: ${r.stderr.trim()}`);
  }
  for (const link of added(before.links, after.links).filter((l) => /^(cni-podman\d+|veth[0-9a-f]+)$/.test(l))) {
    await exec('ip', ['link', 'delete', link]);
  }
  for (const file of added(before.stateFiles, after.stateFiles).sort((x, y) => y.length - x.length)) {
    fs.rmSync(file, { recursive: true, force: true });
  }
  for (const [name, value] of Object.entries(before.sysctls)) {
    if (after.sysctls[name] !== value) fs.writeFileSync(`/proc/sys/${name}`, `${value}\n`);
  }
}
