// A TCP proxy in front of a server (the test database), for tests that take the server away from
// an app mid-test without stopping the server itself.
import assert from 'node:assert/strict';
import net from 'node:net';

/** A TCP proxy to target; close() refuses new connections and cuts the open ones. */
export async function tcpProxy(target: URL): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const track = (s: net.Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
  };
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    track(client);
    track(upstream);
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  assert.ok(address && typeof address === 'object');
  let closed: Promise<void> | null = null;
  return {
    port: address.port,
    close() {
      closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
      return closed;
    },
  };
}
