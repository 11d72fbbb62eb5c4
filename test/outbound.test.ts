import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { embeddedIpv4, isPublicAddress } from '../src/net/addresses.js';
import { OutboundError, outboundRequest, vetHost, type OutboundOptions } from '../src/net/outbound.js';
import { bounds, inBlock, SPECIAL_BLOCKS } from './helpers/special-addresses.js';

let server: http.Server;
let base: string;
let port: number;
const hung: http.ServerResponse[] = [];

before(async () => {
  server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/ok') return res.end(`hello from ${req.socket.localAddress}`);
    if (url.pathname === '/big') return res.end(Buffer.alloc(64 * 1024, 1));
    if (url.pathname === '/hang') {
      hung.push(res);
      return;
    }
    if (url.pathname === '/to') {
      res.writeHead(302, { location: url.searchParams.get('u') ?? '/ok' });
      return res.end();
    }
    if (url.pathname === '/loop') {
      res.writeHead(301, { location: '/loop' });
      return res.end();
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
});
after(async () => {
  for (const r of hung) r.destroy();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

/** Only 127.0.0.1 counts as allowed: 127.0.0.2 (also this machine) stands in for an internal host. */
const onlyFirstLoopback: Partial<OutboundOptions> = { allowAddress: (ip) => ip === '127.0.0.1' };
const opts = (o: Partial<OutboundOptions> = {}): OutboundOptions => ({
  allowPrivate: false,
  timeoutMs: 2000,
  maxBytes: 1024 * 1024,
  maxRedirects: 3,
  ...onlyFirstLoopback,
  ...o,
});

async function refused(p: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(p, (err: unknown) => err instanceof OutboundError && err.code === code);
}

describe('address rules', () => {
  const cases: [string, boolean][] = [
    ['8.8.8.8', true],
    ['1.1.1.1', true],
    ['127.0.0.1', false],
    ['10.1.2.3', false],
    ['172.16.0.1', false],
    ['172.31.255.255', false],
    ['172.32.0.1', true],
    ['192.168.1.1', false],
    ['169.254.169.254', false],
    ['100.64.0.1', false],
    ['0.0.0.0', false],
    ['224.0.0.251', false],
    ['255.255.255.255', false],
    ['198.18.0.1', false],
    ['::1', false],
    ['::', false],
    ['fe80::1', false],
    ['fd00::1', false],
    ['ff02::1', false],
    ['2001:db8::1', false],
    ['2606:4700:4700::1111', true],
    ['::ffff:127.0.0.1', false],
    ['::ffff:10.0.0.1', false],
    ['::ffff:8.8.8.8', true],
    ['64:ff9b::a9fe:a9fe', false],
    ['64:ff9b::808:808', true],
    ['64:ff9b:1::1', false],
    ['2002:c0a8:0101::1', false],
    ['not-an-ip', false],
    // Issue 34 item 8: Azure's platform endpoint (wireserver) is in public space but answers every
    // VM like a metadata service; IPv4-translated addresses (RFC 6145) carry an IPv4 address.
    ['168.63.129.16', false],
    ['::ffff:0:127.0.0.1', false],
    ['::ffff:0:a9fe:a9fe', false],
    ['::ffff:0:10.0.0.1', false],
    ['::ffff:0:8.8.8.8', true],
  ];
  for (const [ip, pub] of cases) {
    test(`${ip} is ${pub ? 'public' : 'refused'}`, () => assert.equal(isPublicAddress(ip), pub));
  }
  test('embedded IPv4 forms are read out', () => {
    assert.equal(embeddedIpv4('::ffff:7f00:1'), '127.0.0.1');
    assert.equal(embeddedIpv4('::ffff:0:7f00:1'), '127.0.0.1');
    assert.equal(embeddedIpv4('64:ff9b::7f00:1'), '127.0.0.1');
    assert.equal(embeddedIpv4('2002:0a00:0001::'), '10.0.0.1');
    assert.equal(embeddedIpv4('2606:4700::1'), null);
  });
});

describe('every special-purpose block (IANA registries, see docs/decisions.md), first and last address and the neighbours', () => {
  for (const row of SPECIAL_BLOCKS) {
    const { first, last } = bounds(row.block);
    test(`${row.block} (${row.name}): ${row.embeds ? 'judged by the IPv4 address it carries' : 'refused'}`, () => {
      if (row.embeds) {
        for (const [ip, pub] of row.embeds) assert.equal(isPublicAddress(ip), pub, ip);
      } else {
        assert.equal(isPublicAddress(first), false, `first address ${first}`);
        assert.equal(isPublicAddress(last), false, `last address ${last}`);
        if (row.sample) assert.equal(isPublicAddress(row.sample), false, row.sample);
      }
      for (const [ip, pub] of row.outside) assert.equal(isPublicAddress(ip), pub, `outside: ${ip}`);
      for (const [ip] of row.outside) assert.ok(!inBlock(ip, row.block), `${ip} is outside ${row.block}`);
    });
  }
});

describe('outbound requests', () => {
  test('names that resolve to loopback are refused unless private networks are allowed', async () => {
    const vet = (allowPrivate: boolean) => ({ allowPrivate, signal: AbortSignal.timeout(2000), timeoutMs: 2000 });
    await refused(vetHost('localhost', vet(false)), 'url_not_public');
    await refused(vetHost('127.0.0.1', vet(false)), 'url_not_public');
    await refused(vetHost('[::1]', vet(false)), 'url_not_public');
    assert.equal((await vetHost('127.0.0.1', vet(true))).address, '127.0.0.1');
    await refused(outboundRequest(`http://localhost:${port}/ok`, opts({ allowAddress: undefined })), 'url_not_public');
  });

  test('the connection goes to the vetted address', async () => {
    const res = await outboundRequest(`${base}/ok`, opts());
    assert.equal(res.status, 200);
    assert.equal(res.address, '127.0.0.1');
    assert.equal(res.body.toString(), 'hello from 127.0.0.1');
  });

  test('every redirect is vetted again: a hop to a refused address fails', async () => {
    const ok = await outboundRequest(`${base}/to?u=${encodeURIComponent(`${base}/ok`)}`, opts());
    assert.equal(ok.status, 200);
    assert.equal(ok.url, `${base}/ok`);
    await refused(outboundRequest(`${base}/to?u=${encodeURIComponent(`http://127.0.0.2:${port}/ok`)}`, opts()), 'url_not_public');
  });

  test('redirect limits, and redirects returned unfollowed when none are allowed', async () => {
    await refused(outboundRequest(`${base}/loop`, opts()), 'too_many_redirects');
    const res = await outboundRequest(`${base}/to`, opts({ maxRedirects: 0 }));
    assert.equal(res.status, 302);
  });

  test('bounded in bytes and time', async () => {
    await refused(outboundRequest(`${base}/big`, opts({ maxBytes: 1000 })), 'too_large');
    await refused(outboundRequest(`${base}/hang`, opts({ timeoutMs: 300 })), 'timeout');
  });

  test('truncateAt keeps the status and a prefix of a large body', async () => {
    const res = await outboundRequest(`${base}/big`, opts({ maxBytes: 1000, truncateAt: 100 }));
    assert.equal(res.status, 200);
    assert.ok(res.body.length >= 100 && res.body.length < 64 * 1024, `kept ${res.body.length} bytes`);
  });

  test('URL rules: schemes, credentials, https-only', async () => {
    await refused(outboundRequest('ftp://example.com/x', opts()), 'bad_url');
    await refused(outboundRequest('not a url', opts()), 'bad_url');
    await refused(outboundRequest(`http://user:pw@127.0.0.1:${port}/ok`, opts()), 'bad_url');
    await refused(outboundRequest(`${base}/ok`, opts({ httpsOnly: true })), 'bad_url');
  });
});
