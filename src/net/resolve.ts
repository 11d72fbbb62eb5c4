import { Resolver } from 'node:dns/promises';
import net from 'node:net';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/**
 * Makes the resolver for one name. One per name because `cancel()` stops every query of a
 * resolver, and a deadline must stop only its own request's queries.
 */
export type ResolverFactory = () => Resolver;

/**
 * c-ares moves to the next server after `timeout` (doubled on each round) and gives up after
 * `tries` rounds; the request's deadline cancels it sooner. A dead first server thus costs about
 * a second, not glibc's five.
 */
export const defaultResolver: ResolverFactory = () => new Resolver({ timeout: 1000, tries: 3 });

export type ResolveOutcome =
  | { kind: 'addresses'; addresses: ResolvedAddress[] }
  /** No address: NXDOMAIN, no A or AAAA record, or a server error; `codes` (A, AAAA) say which, for the log. */
  | { kind: 'none'; codes: [a: string, aaaa: string] }
  /** The servers did not answer within their own timeouts (c-ares ETIMEOUT). */
  | { kind: 'timeout' }
  /** The signal fired: the queries were cancelled. */
  | { kind: 'aborted' };

/**
 * Names RFC 6761 reserves, answered without asking DNS (the resolver does not read /etc/hosts,
 * and a DNS server is not bound to answer them): `localhost` is loopback, `invalid` never exists.
 */
function reserved(name: string): ResolvedAddress[] | null {
  if (name === 'localhost' || name.endsWith('.localhost')) {
    return [
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ];
  }
  if (name === 'invalid' || name.endsWith('.invalid')) return [];
  return null;
}

function errorCode(reason: unknown): string {
  return (reason as NodeJS.ErrnoException | null)?.code ?? 'EUNKNOWN';
}

/**
 * A and AAAA for a host name through c-ares (UDP/TCP sockets on the event loop, not getaddrinfo
 * on the libuv threadpool that file and image work share), cancelled when the signal fires.
 * An IP literal is returned as is. IPv4 answers come first.
 */
export async function resolveHost(hostname: string, signal: AbortSignal, factory: ResolverFactory = defaultResolver): Promise<ResolveOutcome> {
  const bare = hostname.replace(/^\[|\]$/g, '');
  const family = net.isIP(bare);
  if (family === 4 || family === 6) return { kind: 'addresses', addresses: [{ address: bare, family }] };
  const name = bare.toLowerCase().replace(/\.$/, '');
  const local = reserved(name);
  if (local) return local.length ? { kind: 'addresses', addresses: local } : { kind: 'none', codes: ['ENOTFOUND', 'ENOTFOUND'] };
  if (signal.aborted) return { kind: 'aborted' };
  const resolver = factory();
  const cancel = () => resolver.cancel();
  signal.addEventListener('abort', cancel, { once: true });
  try {
    const [v4, v6] = await Promise.allSettled([resolver.resolve4(name), resolver.resolve6(name)]);
    if (signal.aborted) return { kind: 'aborted' };
    const addresses: ResolvedAddress[] = [
      ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 as const })) : []),
      ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 as const })) : []),
    ];
    if (addresses.length) return { kind: 'addresses', addresses };
    const code = (r: PromiseSettledResult<string[]>) => (r.status === 'rejected' ? errorCode(r.reason) : 'ENODATA');
    const codes: [string, string] = [code(v4), code(v6)];
    // NXDOMAIN answers for both types; a timeout on either leaves the question open.
    return codes.includes('ETIMEOUT') && !codes.includes('ENOTFOUND') ? { kind: 'timeout' } : { kind: 'none', codes };
  } finally {
    signal.removeEventListener('abort', cancel);
  }
}
