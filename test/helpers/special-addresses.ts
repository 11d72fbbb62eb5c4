// Every entry of IANA's IPv4 and IPv6 Special-Purpose Address Registries (the versions named in
// docs/decisions.md, "Outbound address rules checked against IANA's registries"), plus the blocks
// outside them that the service also refuses, each with addresses just outside it and what they
// are. test/outbound.test.ts checks the first and last address of each block, the samples, and
// the neighbours; the block arithmetic here is the test's own, not the service's.

export interface SpecialBlock {
  block: string;
  name: string;
  /** Addresses inside the block that carry an IPv4 address, and whether each is public. */
  embeds?: [string, boolean][];
  /** Another address inside the block (one a reader might expect to pass). */
  sample?: string;
  /** Addresses just outside the block, and whether each is public. */
  outside: [string, boolean][];
}

const v4 = (block: string, name: string, outside: [string, boolean][], sample?: string): SpecialBlock => ({ block, name, outside, ...(sample ? { sample } : {}) });
const v6 = v4;

export const SPECIAL_BLOCKS: SpecialBlock[] = [
  // IANA IPv4 Special-Purpose Address Registry (25 entries).
  v4('0.0.0.0/8', '"This network"', [['1.0.0.0', true]]),
  v4('0.0.0.0/32', '"This host on this network"', [['0.0.0.1', false]]),
  v4('10.0.0.0/8', 'Private-Use', [['9.255.255.255', true], ['11.0.0.0', true]]),
  v4('100.64.0.0/10', 'Shared Address Space', [['100.63.255.255', true], ['100.128.0.0', true]]),
  v4('127.0.0.0/8', 'Loopback', [['126.255.255.255', true], ['128.0.0.0', true]]),
  v4('169.254.0.0/16', 'Link Local', [['169.253.255.255', true], ['169.255.0.0', true]]),
  v4('172.16.0.0/12', 'Private-Use', [['172.15.255.255', true], ['172.32.0.0', true]]),
  v4('192.0.0.0/24', 'IETF Protocol Assignments', [['191.255.255.255', true], ['192.0.1.0', true]], '192.0.0.192'),
  v4('192.0.0.0/29', 'IPv4 Service Continuity Prefix', [['192.0.0.8', false]]),
  v4('192.0.0.8/32', 'IPv4 dummy address', [['192.0.0.7', false], ['192.0.0.9', false]]),
  // Globally reachable in the registry, refused: an anycast address reaches the nearest instance,
  // which is often the local router or the provider's own network.
  v4('192.0.0.9/32', 'Port Control Protocol Anycast', [['192.0.0.10', false]]),
  v4('192.0.0.10/32', 'Traversal Using Relays around NAT Anycast', [['192.0.0.11', false]]),
  v4('192.0.0.170/32', 'NAT64/DNS64 Discovery', [['192.0.0.169', false], ['192.0.0.171', false]]),
  v4('192.0.0.171/32', 'NAT64/DNS64 Discovery', [['192.0.0.172', false]]),
  v4('192.0.2.0/24', 'Documentation (TEST-NET-1)', [['192.0.1.255', true], ['192.0.3.0', true]]),
  v4('192.31.196.0/24', 'AS112-v4 (anycast, refused)', [['192.31.195.255', true], ['192.31.197.0', true]]),
  v4('192.52.193.0/24', 'AMT (anycast, refused)', [['192.52.192.255', true], ['192.52.194.0', true]]),
  v4('192.88.99.0/24', 'Deprecated (6to4 Relay Anycast)', [['192.88.98.255', true], ['192.88.100.0', true]]),
  v4('192.88.99.2/32', '6a44-relay anycast address', [['192.88.99.1', false], ['192.88.99.3', false]]),
  v4('192.168.0.0/16', 'Private-Use', [['192.167.255.255', true], ['192.169.0.0', true]]),
  v4('192.175.48.0/24', 'Direct Delegation AS112 Service (anycast, refused)', [['192.175.47.255', true], ['192.175.49.0', true]]),
  v4('198.18.0.0/15', 'Benchmarking', [['198.17.255.255', true], ['198.20.0.0', true]]),
  v4('198.51.100.0/24', 'Documentation (TEST-NET-2)', [['198.51.99.255', true], ['198.51.101.0', true]]),
  v4('203.0.113.0/24', 'Documentation (TEST-NET-3)', [['203.0.112.255', true], ['203.0.114.0', true]]),
  v4('240.0.0.0/4', 'Reserved', [['239.255.255.255', false]]),
  v4('255.255.255.255/32', 'Limited Broadcast', [['255.255.255.254', false]]),
  // Not in that registry, refused as well.
  v4('224.0.0.0/4', 'Multicast (IPv4 Multicast Address Space registry)', [['223.255.255.255', true], ['240.0.0.0', false]]),
  v4('168.63.129.16/32', "Azure's platform endpoint (wireserver), answers every Azure VM", [['168.63.129.15', true], ['168.63.129.17', true]]),

  // IANA IPv6 Special-Purpose Address Registry (25 entries).
  v6('::1/128', 'Loopback Address', [['::', false], ['::2', false]]),
  v6('::/128', 'Unspecified Address', [['::1', false]]),
  {
    block: '::ffff:0:0/96',
    name: 'IPv4-mapped Address',
    embeds: [['::ffff:127.0.0.1', false], ['::ffff:169.254.169.254', false], ['::ffff:8.8.8.8', true]],
    outside: [['::fffe:ffff:ffff', false], ['::1:0:0:0', false]],
  },
  {
    block: '64:ff9b::/96',
    name: 'IPv4-IPv6 Translation (well-known prefix)',
    embeds: [['64:ff9b::127.0.0.1', false], ['64:ff9b::168.63.129.16', false], ['64:ff9b::8.8.8.8', true]],
    outside: [['64:ff9a:ffff:ffff:ffff:ffff:ffff:ffff', false], ['64:ff9b:0:0:0:1::', false]],
  },
  // Local use: where the IPv4 address sits depends on the operator's prefix length (RFC 6052).
  v6('64:ff9b:1::/48', 'IPv4-IPv6 Translation (local use)', [['64:ff9b:0:ffff:ffff:ffff:ffff:ffff', false], ['64:ff9b:2::', false]], '64:ff9b:1::808:808'),
  v6('100::/64', 'Discard-Only Address Block', [['ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', false], ['100:0:0:1::', false]]),
  v6('100:0:0:1::/64', 'Dummy IPv6 Prefix', [['100::ffff:ffff:ffff:ffff', false], ['100:0:0:2::', false]]),
  v6('2001::/23', 'IETF Protocol Assignments', [['2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff', true], ['2001:200::', true]], '2001:1ff::1'),
  v6('2001::/32', 'TEREDO', [['2001:1::', false]]),
  // The anycast and identifier blocks of 2001::/23 the registry calls globally reachable stay
  // refused with the rest of it (anycast reaches a nearby instance; ORCHIDs and DETs are identifiers).
  v6('2001:1::1/128', 'Port Control Protocol Anycast', [['2001:1::', false]]),
  v6('2001:1::2/128', 'Traversal Using Relays around NAT Anycast', [['2001:1::4', false]]),
  v6('2001:1::3/128', 'DNS-SD Service Registration Protocol Anycast', [['2001:1::4', false]]),
  v6('2001:2::/48', 'Benchmarking', [['2001:1:ffff:ffff:ffff:ffff:ffff:ffff', false], ['2001:2:1::', false]]),
  v6('2001:3::/32', 'AMT', [['2001:4::', false]]),
  v6('2001:4:112::/48', 'AS112-v6', [['2001:4:111:ffff:ffff:ffff:ffff:ffff', false], ['2001:4:113::', false]]),
  v6('2001:10::/28', 'Deprecated (previously ORCHID)', [['2001:f:ffff:ffff:ffff:ffff:ffff:ffff', false], ['2001:20::', false]]),
  v6('2001:20::/28', 'ORCHIDv2', [['2001:30::', false]]),
  v6('2001:30::/28', 'Drone Remote ID Protocol Entity Tags (DETs) Prefix', [['2001:40::', false]]),
  v6('2001:db8::/32', 'Documentation', [['2001:db7:ffff:ffff:ffff:ffff:ffff:ffff', true], ['2001:db9::', true]]),
  {
    block: '2002::/16',
    name: '6to4',
    embeds: [['2002:7f00:1::1', false], ['2002:a9fe:a9fe::', false], ['2002:808:808::1', true]],
    outside: [['2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff', true], ['2003::', true]],
  },
  v6('2620:4f:8000::/48', 'Direct Delegation AS112 Service (anycast, refused)', [['2620:4f:7fff:ffff:ffff:ffff:ffff:ffff', true], ['2620:4f:8001::', true]]),
  v6('3fff::/20', 'Documentation', [['3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff', true], ['3fff:1000::', true]]),
  v6('5f00::/16', 'Segment Routing (SRv6) SIDs', [['5eff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', false], ['5f01::', false]]),
  v6('fc00::/7', 'Unique-Local', [['fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', false], ['fe00::', false]]),
  v6('fe80::/10', 'Link-Local Unicast', [['fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff', false], ['fec0::', false]]),
  // Not in that registry, refused as well.
  {
    block: '::ffff:0:0:0/96',
    name: 'IPv4-translated (RFC 6145)',
    embeds: [['::ffff:0:127.0.0.1', false], ['::ffff:0:169.254.169.254', false], ['::ffff:0:8.8.8.8', true]],
    outside: [['0:0:0:0:fffe:ffff:ffff:ffff', false], ['::ffff:1:0:0', false]],
  },
  {
    block: '::/96',
    name: 'IPv4-compatible, deprecated (RFC 4291)',
    embeds: [['::127.0.0.2', false], ['::10.0.0.1', false], ['::8.8.8.8', true]],
    outside: [['::1:0:0', false]],
  },
  v6('fec0::/10', 'Site-local, deprecated (RFC 3879)', [['ff00::', false]]),
  v6('ff00::/8', 'Multicast', [['feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', false]]),
  // Only 2000::/3 is global unicast (IANA's IPv6 Address Space registry): the rest is reserved.
  v6('::/3', 'outside global unicast, below it', [['2000::', true]], '1::1'),
  v6('4000::/2', 'outside global unicast, above it', [['3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', true]], '4000::1'),
  v6('8000::/1', 'outside global unicast, above it', [], 'c000::1'),
];

function toBigInt(ip: string): { value: bigint; bits: number } {
  if (!ip.includes(':')) {
    const parts = ip.split('.').map(Number);
    return { value: parts.reduce((a, p) => (a << 8n) | BigInt(p), 0n), bits: 32 };
  }
  // URL parsing turns a dotted IPv4 tail into hex groups.
  const host = new URL(`http://[${ip}]/`).hostname.slice(1, -1);
  const [head = '', tail = ''] = host.split('::');
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = host.includes('::') ? [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t] : h;
  return { value: groups.reduce((a, g) => (a << 16n) | BigInt(parseInt(g, 16)), 0n), bits: 128 };
}

function fromBigInt(value: bigint, bits: number): string {
  if (bits === 32) return [24n, 16n, 8n, 0n].map((s) => String((value >> s) & 0xffn)).join('.');
  return Array.from({ length: 8 }, (_, i) => ((value >> BigInt(112 - 16 * i)) & 0xffffn).toString(16)).join(':');
}

/** The first and last address of a block. */
export function bounds(block: string): { first: string; last: string } {
  const [base = '', len = ''] = block.split('/');
  const { value, bits } = toBigInt(base);
  const host = (1n << BigInt(bits - Number(len))) - 1n;
  return { first: fromBigInt(value & ~host, bits), last: fromBigInt((value & ~host) | host, bits) };
}

export function inBlock(ip: string, block: string): boolean {
  const a = toBigInt(ip);
  const [base = ''] = block.split('/');
  if (a.bits !== toBigInt(base).bits) return false;
  const { first, last } = bounds(block);
  return a.value >= toBigInt(first).value && a.value <= toBigInt(last).value;
}
