// Kept-alive outbound connections (src/net/agents.ts): a socket is reused only for the same host,
// port and vetted address; every request is still resolved and vetted first (a warm connection
// does not let a host that now resolves inside through); idle sockets close after the idle time
// and within the bounds; a connection cut off by the deadline or the size bound is dropped, not
// reused; a reused connection the server had closed is tried once more on a new one. Real HTTP
// servers on two loopback addresses and real DNS servers on loopback UDP stand in for the world's.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { after, before, beforeEach, describe, test } from 'node:test';
import { AgentPool, type AgentPoolOptions } from '../src/net/agents.js';
import { OutboundError, outboundRequest, type OutboundOptions } from '../src/net/outbound.js';
import { DnsServer } from './helpers/dns-server.js';
import { waitFor } from './helpers/worker.js';

/** An HTTP server on one loopback address that numbers its connections and counts requests. */
class Site {
  readonly server: http.Server;
  connections = 0;
  requests = 0;
  readonly open = new Set<Socket>();
  /** Requests held by /hold until release(). */
  private readonly held: http.ServerResponse[] = [];
  private readonly ids = new WeakMap<Socket, number>();
  /** Per connection: how many requests it has carried. */
  private readonly served = new WeakMap<Socket, number>();

  constructor(readonly host: string) {
    this.server = http.createServer((req, res) => {
      this.requests++;
      const n = (this.served.get(req.socket) ?? 0) + 1;
      this.served.set(req.socket, n);
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      // A server that closed the connection as the request came: the first request of each
      // connection is answered, a later one on the same connection is cut off unanswered.
      if (path === '/once' && n > 1) return req.socket.destroy();
      if (path === '/close') return req.socket.destroy();
      if (path === '/hang') return;
      if (path === '/hold') {
        this.held.push(res);
        return;
      }
      if (path === '/big') return res.end(Buffer.alloc(64 * 1024, 1));
      res.end(`hello from ${req.socket.localAddress} on connection ${this.ids.get(req.socket)}`);
    });
    // Longer than any test: only the client closes an idle connection.
    this.server.keepAliveTimeout = 60_000;
    this.server.on('connection', (socket: Socket) => {
      this.ids.set(socket, ++this.connections);
      this.open.add(socket);
      socket.on('close', () => this.open.delete(socket));
    });
  }

  async listen(port: number): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, this.host, () => resolve());
    });
    return (this.server.address() as AddressInfo).port;
  }

  get heldCount(): number {
    return this.held.length;
  }

  release(): void {
    for (const res of this.held.splice(0)) res.end('released');
  }

  async close(): Promise<void> {
    for (const s of this.open) s.destroy();
    await new Promise((r) => this.server.close(r));
  }
}

const one = new Site('127.0.0.1');
const two = new Site('127.0.0.2');
let port: number;
let toOne: DnsServer;
let toTwo: DnsServer;
const pools: AgentPool[] = [];

before(async () => {
  port = await one.listen(0);
  await two.listen(port);
  toOne = await DnsServer.start({ 'site.example': { a: ['127.0.0.1'] } });
  toTwo = await DnsServer.start({ 'site.example': { a: ['127.0.0.2'] } });
});
// Each test starts with no connection open: the last test's pool is closed and its sockets gone.
beforeEach(async () => {
  for (const p of pools.splice(0)) p.close();
  await waitFor('no connection left open', async () => (one.open.size + two.open.size === 0 ? true : undefined));
});
after(async () => {
  for (const p of pools) p.close();
  await one.close();
  await two.close();
  await toOne.close();
  await toTwo.close();
});

function pool(o: Partial<AgentPoolOptions> = {}): AgentPool {
  const p = new AgentPool({ idleMs: 60_000, maxAgents: 16, maxIdleSockets: 16, ...o });
  pools.push(p);
  return p;
}

/** Both loopback addresses stand for public ones unless `allowAddress` is narrowed. */
const opts = (agents: AgentPool, o: Partial<OutboundOptions> = {}): OutboundOptions => ({
  allowPrivate: false,
  timeoutMs: 5000,
  maxBytes: 1024 * 1024,
  maxRedirects: 0,
  allowAddress: (ip) => ip === '127.0.0.1' || ip === '127.0.0.2',
  resolver: () => toOne.resolver(),
  agents,
  ...o,
});

async function get(url: string, o: OutboundOptions): Promise<string> {
  const res = await outboundRequest(url, o);
  assert.equal(res.status, 200);
  return res.body.toString();
}

async function failure(p: Promise<unknown>): Promise<OutboundError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof OutboundError, `an OutboundError, not ${String(err)}`);
    return err;
  }
  assert.fail('the request succeeded');
}

describe('which connection a request may reuse', () => {
  test('the same host, port and vetted address reuse one; a new DNS answer or another host name gets its own', async () => {
    const agents = pool();
    const c1 = one.connections;
    const c2 = two.connections;
    const first = await get(`http://site.example:${port}/`, opts(agents));
    assert.equal(first, `hello from 127.0.0.1 on connection ${c1 + 1}`);
    assert.equal(await get(`http://site.example:${port}/`, opts(agents)), first, 'the second request reuses the connection');
    // DNS moved the name: the new address is vetted and gets a connection of its own.
    const moved = opts(agents, { resolver: () => toTwo.resolver() });
    assert.equal(await get(`http://site.example:${port}/`, moved), `hello from 127.0.0.2 on connection ${c2 + 1}`);
    // The same address and port under another name does not get site.example's connection.
    assert.equal(await get(`http://127.0.0.1:${port}/`, opts(agents)), `hello from 127.0.0.1 on connection ${c1 + 2}`);
    // And back: the first connection is still the one for site.example on 127.0.0.1.
    assert.equal(await get(`http://site.example:${port}/`, opts(agents)), first);
    assert.equal(agents.size, 3);
    assert.equal(one.connections - c1, 2);
    assert.equal(two.connections - c2, 1);
  });

  test('a warm connection does not let a host through that now resolves to a refused address', async () => {
    const agents = pool();
    const onlyOne = (ip: string) => ip === '127.0.0.1';
    await get(`http://site.example:${port}/`, opts(agents, { allowAddress: onlyOne }));
    const seen = [one.requests, two.requests];
    const err = await failure(outboundRequest(`http://site.example:${port}/`, opts(agents, { allowAddress: onlyOne, resolver: () => toTwo.resolver() })));
    assert.equal(err.code, 'url_not_public');
    assert.deepEqual([one.requests, two.requests], seen, 'no request went out, on the warm connection or any other');
    const literal = await failure(outboundRequest(`http://127.0.0.2:${port}/`, opts(agents, { allowAddress: onlyOne })));
    assert.equal(literal.code, 'url_not_public');
    assert.deepEqual([one.requests, two.requests], seen);
  });
});

describe('bounds', () => {
  test('an idle connection is closed after the idle time', async () => {
    const agents = pool({ idleMs: 200 });
    await get(`http://site.example:${port}/`, opts(agents));
    await waitFor('the idle connection to close', async () => (one.open.size === 0 && agents.idleSockets === 0 ? true : undefined), 10_000);
  });

  test('no more idle connections are kept than the bound', async () => {
    const agents = pool({ maxIdleSockets: 1 });
    const c = one.connections;
    // Two requests at once need two connections; once both are answered only one stays.
    const both = Promise.all([get(`http://site.example:${port}/hold`, opts(agents)), get(`http://site.example:${port}/hold`, opts(agents))]);
    await waitFor('both requests held', async () => (one.heldCount === 2 ? true : undefined));
    one.release();
    await both;
    assert.equal(one.connections - c, 2);
    await waitFor('one connection left open', async () => (one.open.size === 1 ? true : undefined));
    assert.equal(agents.idleSockets, 1);
  });

  test('no more agents are kept than the bound: the least recently used is retired with its connections', async () => {
    const agents = pool({ maxAgents: 2 });
    await get(`http://site.example:${port}/`, opts(agents));
    await get(`http://127.0.0.1:${port}/`, opts(agents));
    await get(`http://localhost:${port}/`, opts(agents, { allowPrivate: true }));
    assert.equal(agents.size, 2);
    await waitFor('the retired agent to close its connection', async () => (one.open.size === 2 ? true : undefined));
  });

  test('close() ends every kept connection; later requests still go out, on connections of their own', async () => {
    const agents = pool();
    await get(`http://site.example:${port}/`, opts(agents));
    assert.equal(one.open.size, 1);
    agents.close();
    await waitFor('the kept connection to close', async () => (one.open.size === 0 ? true : undefined));
    await get(`http://site.example:${port}/`, opts(agents));
    await waitFor('the one-off connection to close', async () => (one.open.size === 0 ? true : undefined));
    assert.equal(agents.size, 0);
  });
});

describe('a bad connection is never reused', () => {
  test('cut off at the deadline or the size bound: the next request gets a new connection', async () => {
    const agents = pool();
    const c = one.connections;
    await get(`http://site.example:${port}/`, opts(agents));
    assert.equal((await failure(outboundRequest(`http://site.example:${port}/hang`, opts(agents, { timeoutMs: 300 })))).code, 'timeout');
    assert.equal(await get(`http://site.example:${port}/`, opts(agents)), `hello from 127.0.0.1 on connection ${c + 2}`);
    assert.equal((await failure(outboundRequest(`http://site.example:${port}/big`, opts(agents, { maxBytes: 1000 })))).code, 'too_large');
    assert.equal(await get(`http://site.example:${port}/`, opts(agents)), `hello from 127.0.0.1 on connection ${c + 3}`);
    assert.equal(one.connections - c, 3);
  });

  test('a reused connection the server closed before answering: sent once more, on a new connection', async () => {
    const agents = pool();
    const c = one.connections;
    const r = one.requests;
    await get(`http://site.example:${port}/once`, opts(agents));
    // The kept connection is cut off by the server as the request arrives; the request goes again
    // on a new connection, within the same deadline, and that one answers.
    assert.equal(await get(`http://site.example:${port}/once`, opts(agents)), `hello from 127.0.0.1 on connection ${c + 2}`);
    assert.equal(one.requests - r, 3);
    assert.equal(one.connections - c, 2);
  });

  test('a new connection cut off before the answer is a failure, not sent again', async () => {
    const agents = pool();
    const r = one.requests;
    const err = await failure(outboundRequest(`http://site.example:${port}/close`, opts(agents)));
    assert.equal(err.code, 'connection_failed');
    assert.equal(one.requests - r, 1);
  });
});
