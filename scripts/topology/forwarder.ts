// A plain TCP forwarder: hosts in their own namespaces reach a server that listens on this
// machine's loopback only (the machine's PostgreSQL, the brand test site) through a port on the
// bridge address. Bytes pass untouched, so TLS, the PostgreSQL protocol and LISTEN/NOTIFY work.
import net from 'node:net';

export interface Forwarder {
  host: string;
  port: number;
  close(): Promise<void>;
}

export async function startForwarder(listenHost: string, target: { host: string; port: number }): Promise<Forwarder> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((inbound) => {
    const outbound = net.connect(target.port, target.host);
    for (const s of [inbound, outbound]) {
      sockets.add(s);
      s.setNoDelay(true);
      s.once('close', () => sockets.delete(s));
    }
    // Either side failing or ending takes the other down with it, as one connection would.
    inbound.once('error', () => outbound.destroy());
    outbound.once('error', () => inbound.destroy());
    inbound.once('close', () => outbound.destroy());
    outbound.once('close', () => inbound.destroy());
    inbound.pipe(outbound);
    outbound.pipe(inbound);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, listenHost, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (!address || typeof address !== 'object') throw new Error('forwarder has no port');
  return {
    host: listenHost,
    port: address.port,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}
