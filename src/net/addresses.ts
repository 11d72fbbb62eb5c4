import net from 'node:net';

/**
 * Addresses an outbound request must never reach. Checked against IANA's IPv4 and IPv6
 * Special-Purpose Address Registries (the versions named in docs/decisions.md, "Outbound address
 * rules checked against IANA's registries"): every entry is refused, including the anycast ones
 * the registries call globally reachable (an anycast address reaches the nearest instance, often
 * the local router or the provider's network), except the IPv6 forms that carry an IPv4 address
 * (mapped, translated, compatible, the NAT64 well-known prefix, 6to4), which are judged by it.
 * IPv6 is public only inside global unicast, 2000::/3: everything outside it is reserved or local.
 */
function build(): { v4: net.BlockList; v6: net.BlockList } {
  const v4 = new net.BlockList();
  const v4Blocks: [string, number][] = [
    ['0.0.0.0', 8], // "This network"
    ['10.0.0.0', 8], // private use
    ['100.64.0.0', 10], // shared address space (carrier NAT; Alibaba's metadata service)
    ['127.0.0.0', 8], // loopback
    ['169.254.0.0', 16], // link local (most clouds' metadata services)
    ['172.16.0.0', 12], // private use
    ['192.0.0.0', 24], // IETF protocol assignments: DS-Lite, dummy, PCP and TURN anycast, NAT64 discovery
    ['192.0.2.0', 24], // documentation (TEST-NET-1)
    ['192.31.196.0', 24], // AS112-v4 (anycast)
    ['192.52.193.0', 24], // AMT relays (anycast)
    ['192.88.99.0', 24], // deprecated 6to4 relay anycast, 6a44 relay
    ['192.168.0.0', 16], // private use
    ['192.175.48.0', 24], // AS112 direct delegation (anycast)
    ['198.18.0.0', 15], // benchmarking
    ['198.51.100.0', 24], // documentation (TEST-NET-2)
    ['203.0.113.0', 24], // documentation (TEST-NET-3)
    ['224.0.0.0', 4], // multicast
    ['240.0.0.0', 4], // reserved, and the limited broadcast address
    // Azure's platform endpoint (wireserver): public space, but every Azure VM reaches the host's
    // own agent there (VM configuration, health, DNS), as it would a metadata address.
    ['168.63.129.16', 32],
  ];
  for (const [a, p] of v4Blocks) v4.addSubnet(a, p, 'ipv4');
  const v6 = new net.BlockList();
  // Only the blocks inside 2000::/3; the rest of the space is refused before this list is asked.
  const v6Blocks: [string, number][] = [
    ['2001::', 23], // IETF protocol assignments: Teredo, benchmarking, anycast, ORCHID(v2), DETs
    ['2001:db8::', 32], // documentation
    ['2620:4f:8000::', 48], // AS112 direct delegation (anycast)
    ['3fff::', 20], // documentation (RFC 9637)
  ];
  for (const [a, p] of v6Blocks) v6.addSubnet(a, p, 'ipv6');
  return { v4, v6 };
}

let blocked: { v4: net.BlockList; v6: net.BlockList } | null = null;

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

/**
 * The IPv4 address an IPv6 address carries (mapped, translated, compatible, NAT64 well-known
 * prefix or 6to4), if any. The local-use NAT64 prefix 64:ff9b:1::/48 is not read: where its IPv4
 * address sits depends on the operator's prefix length (RFC 6052), so it is refused whole.
 */
export function embeddedIpv4(ip: string): string | null {
  const g = expandV6(ip);
  if (!g) return null;
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  const zeros = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (zeros(5) && g[5] === 0xffff) return v4(g[6]!, g[7]!); // ::ffff:a.b.c.d, mapped
  if (zeros(4) && g[4] === 0xffff && g[5] === 0) return v4(g[6]!, g[7]!); // ::ffff:0:a.b.c.d, translated (RFC 6145)
  if (zeros(6) && (g[6]! !== 0 || g[7]! > 1)) return v4(g[6]!, g[7]!); // ::a.b.c.d, compatible (deprecated)
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return v4(g[6]!, g[7]!); // 64:ff9b::/96
  if (g[0] === 0x2002) return v4(g[1]!, g[2]!); // 6to4
  return null;
}

/** True when the address is globally routable, so a request there cannot reach inside. */
export function isPublicAddress(ip: string): boolean {
  blocked ??= build();
  const family = net.isIP(ip);
  if (family === 4) return !blocked.v4.check(ip, 'ipv4');
  if (family === 6) {
    const inner = embeddedIpv4(ip);
    if (inner) return isPublicAddress(inner);
    const g = expandV6(ip);
    if (!g) return false;
    if ((g[0]! & 0xe000) !== 0x2000) return false; // outside global unicast 2000::/3
    return !blocked.v6.check(ip, 'ipv6');
  }
  return false;
}
