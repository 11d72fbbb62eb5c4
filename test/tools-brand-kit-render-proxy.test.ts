// The render proxy's byte budget (issue 34): many requests at once share one budget, counted as
// the bytes stream, not when each request ends (item 2); a CONNECT tunnel counts and caps what
// the browser sends as well as what it receives (item 5). The proxy on its own, driven over
// loopback sockets as Chromium drives it; the rest of the proxy: tools-brand-kit-render.test.ts.
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { RenderProxy } from '../src/tools/brand-kit/render/proxy.js';

const MB = 1024 * 1024;
const BLOB = Buffer.alloc(5 * MB, 0x61);

let origin: http.Server;
let originPort = 0;
/** Bytes the sink received over all its connections. */
let sunk = 0;
let sink: net.Server;
let sinkPort = 0;

before(async () => {
  origin = http.createServer((req, res) => {
    if (req.url === '/blob') {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(BLOB.length) });
      // Slowly enough that every request is under way before any ends.
      let sent = 0;
      const next = () => {
        if (sent >= BLOB.length) return res.end();
        const piece = BLOB.subarray(sent, sent + 256 * 1024);
        sent += piece.length;
        res.write(piece, () => setTimeout(next, 20));
      };
      next();
      return;
    }
    if (req.method === 'POST') {
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok'));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
  originPort = (origin.address() as net.AddressInfo).port;
  sink = net.createServer((socket) => {
    socket.on('data', (c: Buffer) => (sunk += c.length));
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  sinkPort = (sink.address() as net.AddressInfo).port;
});
after(async () => {
  origin.closeAllConnections();
  await new Promise<void>((resolve) => origin.close(() => resolve()));
  await new Promise<void>((resolve) => sink.close(() => resolve()));
});

function proxyWith(maxBytes: number): RenderProxy {
  return new RenderProxy({
    allowPrivate: true,
    maxBytes,
    maxRequests: 150,
    maxResponseBytes: 5 * MB,
    requestTimeoutMs: 20_000,
    logger: pino({ level: 'silent' }),
  });
}

const auth = (proxy: RenderProxy) => `Basic ${Buffer.from(`${proxy.credentials.username}:${proxy.credentials.password}`).toString('base64')}`;

/** One GET through the proxy; resolves with the bytes the client received (a cut answer counts what came). */
function get(proxyPort: number, proxy: RenderProxy, url: string): Promise<number> {
  return new Promise((resolve) => {
    let got = 0;
    const req = http.get({ host: '127.0.0.1', port: proxyPort, path: url, headers: { host: new URL(url).host, 'proxy-authorization': auth(proxy) } }, (res) => {
      res.on('data', (c: Buffer) => (got += c.length));
      res.on('end', () => resolve(got));
      res.on('error', () => resolve(got));
      res.on('aborted', () => resolve(got));
    });
    req.on('error', () => resolve(got));
  });
}

describe('item 2: one byte budget for all requests at once', () => {
  test('30 requests of 5 MB at once through a 20 MB budget: at most 20 MB goes through, counted as it streams', async () => {
    const proxy = proxyWith(20 * MB);
    try {
      const port = Number(new URL(await proxy.start()).port);
      let peakHeap = 0;
      const timer = setInterval(() => (peakHeap = Math.max(peakHeap, process.memoryUsage().arrayBuffers)), 10);
      const before = process.memoryUsage().arrayBuffers;
      const received = await Promise.all(Array.from({ length: 30 }, () => get(port, proxy, `http://127.0.0.1:${originPort}/blob`)));
      clearInterval(timer);
      const total = received.reduce((a, b) => a + b, 0);
      assert.ok(total <= 20 * MB, `the browser received ${(total / MB).toFixed(1)} MB`);
      assert.ok(proxy.stats.bytes <= 20 * MB + 64 * 1024, `the proxy counted ${(proxy.stats.bytes / MB).toFixed(1)} MB`);
      assert.ok(proxy.stats.refused >= 25, `refused ${proxy.stats.refused}`);
      // What the proxy holds at once is bounded by the budget too, not by 30 answers of 5 MB.
      assert.ok(peakHeap - before < 40 * MB, `buffers grew ${((peakHeap - before) / MB).toFixed(1)} MB`);
    } finally {
      await proxy.close();
    }
  });

  test("a request body counts against the budget too", async () => {
    const proxy = proxyWith(1 * MB);
    try {
      const port = Number(new URL(await proxy.start()).port);
      const post = () =>
        new Promise<number>((resolve, reject) => {
          const req = http.request(
            { host: '127.0.0.1', port, method: 'POST', path: `http://127.0.0.1:${originPort}/form`, headers: { host: `127.0.0.1:${originPort}`, 'proxy-authorization': auth(proxy), 'content-type': 'text/plain' } },
            (res) => {
              res.resume();
              resolve(res.statusCode ?? 0);
            },
          );
          req.on('error', reject);
          req.end(Buffer.alloc(60 * 1024, 0x62));
        });
      const statuses: number[] = [];
      for (let i = 0; i < 30; i++) statuses.push(await post());
      assert.ok(statuses.includes(503), `statuses: ${statuses.join(',')}`);
      assert.ok(proxy.stats.bytes <= 1 * MB + 64 * 1024, `counted ${proxy.stats.bytes}`);
      assert.ok(statuses.filter((s) => s === 200).length <= 17, `${statuses.filter((s) => s === 200).length} bodies of 60 KB went through a 1 MB budget`);
    } finally {
      await proxy.close();
    }
  });
});

describe('item 5: a tunnel counts both directions', () => {
  test('50 MB sent out through one tunnel with a 2 MB budget: the tunnel is cut near 2 MB and the bytes are counted', async () => {
    const proxy = proxyWith(2 * MB);
    sunk = 0;
    try {
      const port = Number(new URL(await proxy.start()).port);
      const socket = net.connect(port, '127.0.0.1');
      socket.on('error', () => {});
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      socket.write(`CONNECT 127.0.0.1:${sinkPort} HTTP/1.1\r\nhost: 127.0.0.1:${sinkPort}\r\nproxy-authorization: ${auth(proxy)}\r\n\r\n`);
      await new Promise<void>((resolve) => socket.once('data', () => resolve()));
      const chunk = Buffer.alloc(256 * 1024, 0x63);
      let written = 0;
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      while (written < 50 * MB && !socket.destroyed) {
        written += chunk.length;
        if (!socket.write(chunk)) await Promise.race([new Promise((r) => socket.once('drain', r)), closed]);
      }
      await Promise.race([closed, new Promise((r) => setTimeout(r, 5000))]);
      assert.ok(socket.destroyed, 'the tunnel was cut');
      assert.ok(sunk <= 2 * MB + 512 * 1024, `the far end received ${(sunk / MB).toFixed(1)} MB`);
      assert.ok(proxy.stats.bytes >= sunk, `the proxy counted ${proxy.stats.bytes} of ${sunk} bytes sent`);
    } finally {
      await proxy.close();
    }
  });
});
