import net from 'node:net';

/**
 * Addresses an outbound request must never reach: loopback, private, link-local (which holds
 * cloud metadata services), shared, multicast, reserved and documentation ranges, for IPv4 and
 * IPv6. IPv4-mapped, IPv4-compatible, NAT64 and 6to4 IPv6 forms are judged by the IPv4 address
 * they carry.
 */
function build(): net.BlockList {
  const list = new net.BlockList();
  const v4: [string, number][] = [
    ['0.0.0.0', 8],
    ['10.0.0.0', 8],
    ['100.64.0.0', 10],
    ['127.0.0.0', 8],
    ['169.254.0.0', 16],
    ['172.16.0.0', 12],
    ['192.0.0.0', 24],
    ['192.0.2.0', 24],
    ['192.31.196.0', 24],
    ['192.52.193.0', 24],
    ['192.88.99.0', 24],
    ['192.168.0.0', 16],
    ['192.175.48.0', 24],
    ['198.18.0.0', 15],
    ['198.51.100.0', 24],
    ['203.0.113.0', 24],
    ['224.0.0.0', 4],
    ['240.0.0.0', 4],
  ];
  for (const [a, p] of v4) list.addSubnet(a, p, 'ipv4');
  const v6: [string, number][] = [
    ['::', 128],
    ['::1', 128],
    ['100::', 64],
    ['2001::', 23],
    ['2001:db8::', 32],
    ['fc00::', 7],
    ['fe80::', 10],
    ['fec0::', 10],
    ['ff00::', 8],
  ];
  for (const [a, p] of v6) list.addSubnet(a, p, 'ipv6');
  return list;
}

let blocked: net.BlockList | null = null;

function expandV6(ip: string): number[] | null {
  // Normalise through URL parsing, which also handles an embedded dotted IPv4 tail.
  let host: string;
  try {
    host = new URL(`http://[${ip}]/`).hostname.slice(1, -1);
  } catch {
    return null;
  }
  const [head = '', tail = ''] = host.split('::');
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const fill = host.includes('::') ? 8 - h.length - t.length : 0;
  const groups = [...h, ...Array.from({ length: fill }, () => '0'), ...t].map((g) => parseInt(g || '0', 16));
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : null;
}

/** The IPv4 address an IPv6 address carries (mapped, compatible, NAT64 or 6to4), if any. */
export function embeddedIpv4(ip: string): string | null {
  const g = expandV6(ip);
  if (!g) return null;
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  const zeros = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (zeros(5) && g[5] === 0xffff) return v4(g[6]!, g[7]!); // ::ffff:a.b.c.d
  if (zeros(6) && (g[6]! !== 0 || g[7]! > 1)) return v4(g[6]!, g[7]!); // ::a.b.c.d (deprecated)
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return v4(g[6]!, g[7]!); // 64:ff9b::/96
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 1) return v4(g[6]!, g[7]!); // 64:ff9b:1::/48 (local NAT64)
  if (g[0] === 0x2002) return v4(g[1]!, g[2]!); // 6to4
  return null;
}

/** True when the address is globally routable, so a request there cannot reach inside. */
export function isPublicAddress(ip: string): boolean {
  blocked ??= build();
  const family = net.isIP(ip);
  if (family === 4) return !blocked.check(ip, 'ipv4');
  if (family === 6) {
    const inner = embeddedIpv4(ip);
    if (inner) return isPublicAddress(inner);
    const g = expandV6(ip);
    if (!g) return false;
    // NAT64 local-use prefix without a usable tail is still internal.
    if (g[0] === 0x64 && g[1] === 0xff9b) return false;
    return !blocked.check(ip, 'ipv6');
  }
  return false;
}
