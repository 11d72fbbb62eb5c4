import net from 'node:net';

/** The eight 16-bit words of an IPv6 address, or null when it is not one. */
function ipv6Words(address: string): number[] | null {
  const ip = address.replace(/%.*$/, ''); // a zone (fe80::1%eth0) names the interface, not the host
  if (!net.isIPv6(ip)) return null;
  let text = ip;
  // A dotted IPv4 tail (::ffff:192.0.2.1) is two words.
  const tail = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (tail) {
    const [a, b, c, d] = tail.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, tail.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, rest] = text.split('::') as [string, string | undefined];
  const words = (s: string) => (s === '' ? [] : s.split(':').map((w) => parseInt(w, 16)));
  if (rest === undefined) return words(head);
  const front = words(head);
  const back = words(rest);
  return [...front, ...Array<number>(8 - front.length - back.length).fill(0), ...back];
}

/**
 * The client a request counts against when lookups of unseen keys are shared out: an IPv4
 * address as it is (an IPv4-mapped IPv6 address counts as its IPv4 address), an IPv6 address by
 * its /64, the smallest block a site or a home line is given, so one host cannot pose as 2^64
 * clients. Anything else (no address at all) is one client of its own.
 */
export function clientGroup(address: string | undefined): string {
  if (!address) return '?';
  if (net.isIPv4(address)) return address;
  const words = ipv6Words(address);
  if (!words) return address;
  if (words.slice(0, 5).every((w) => w === 0) && words[5] === 0xffff) {
    const [hi = 0, lo = 0] = words.slice(6);
    return [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff].join('.');
  }
  return `${words
    .slice(0, 4)
    .map((w) => w.toString(16))
    .join(':')}::/64`;
}
