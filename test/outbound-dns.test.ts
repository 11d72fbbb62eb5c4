// Outbound name resolution: through c-ares (not getaddrinfo on the threadpool), inside the
// request's deadline, A and AAAA both asked and every answer vetted, and the same message for a
// name that does not resolve as for one that resolves inside (the log tells them apart). Real DNS
// servers on loopback UDP stand in for the world's.
import assert from 'node:assert/strict';
import { Resolver } from 'node:dns/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { logRefusal, OutboundError, outboundRequest, type OutboundOptions } from '../src/net/outbound.js';
import { LogSink } from './helpers/app.js';
import { DnsServer } from './helpers/dns-server.js';
import { testLogger } from './helpers/test-logs.js';
import { waitFor } from './helpers/worker.js';

/** A real resolver that counts its cancels. */
class WatchedResolver extends Resolver {
  cancels = 0;
  override cancel(): void {
    this.cancels++;
    super.cancel();
  }
}

function watched(dns: DnsServer): WatchedResolver {
  const r = new WatchedResolver({ timeout: 60_000, tries: 1 });
  r.setServers([dns.server]);
  return r;
}

let web: http.Server;
let port: number;
let silent: DnsServer;
let table: DnsServer;

before(async () => {
  web = http.createServer((req, res) => res.end(`hello from ${req.socket.localAddress}`));
  await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
  port = (web.address() as AddressInfo).port;
  silent = await DnsServer.start(null);
  table = await DnsServer.start({
    'site.example': { a: ['127.0.0.1'] },
    'inside.example': { a: ['127.0.0.2'] },
    'mixed.example': { a: ['127.0.0.1'], aaaa: ['::1'] },
  });
});
after(async () => {
  web.closeAllConnections();
  await new Promise((r) => web.close(r));
  await silent.close();
  await table.close();
});

/** 127.0.0.1 stands for a public address; every other one (127.0.0.2, ::1) for an internal one. */
const opts = (o: Partial<OutboundOptions> = {}): OutboundOptions => ({
  allowPrivate: false,
  timeoutMs: 5000,
  maxBytes: 1024 * 1024,
  maxRedirects: 0,
  allowAddress: (ip) => ip === '127.0.0.1',
  resolver: () => table.resolver(),
  ...o,
});

async function failure(p: Promise<unknown>): Promise<OutboundError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof OutboundError, `an OutboundError, not ${String(err)}`);
    return err;
  }
  assert.fail('the request succeeded');
}

describe('resolution inside the deadline', () => {
  test('a DNS server that never answers: the request fails as a timeout at its deadline and the queries are cancelled', { timeout: 30_000 }, async () => {
    const resolver = watched(silent);
    const before = silent.queries.length;
    // The resolver's own timeout is a minute: only the request's deadline can end this in time.
    // The watchdog, far wider than the deadline, must not have fired when the request settles.
    const watchdog = AbortSignal.timeout(15_000);
    const err = await failure(outboundRequest(`http://never.example:${port}/`, opts({ timeoutMs: 300, resolver: () => resolver })));
    assert.equal(watchdog.aborted, false);
    assert.equal(err.code, 'timeout');
    assert.equal(err.message, 'no complete answer within 300 ms');
    assert.equal(resolver.cancels, 1);
    assert.deepEqual(
      silent.queries.slice(before).map((q) => `${q.type} ${q.name}`).sort(),
      ['A never.example', 'AAAA never.example'],
    );
  });

  test("the caller's signal cancels a resolution under way", { timeout: 30_000 }, async () => {
    const resolver = watched(silent);
    const before = silent.queries.length;
    const cancel = new AbortController();
    const pending = failure(outboundRequest(`http://stuck.example:${port}/`, opts({ timeoutMs: 60_000, signal: cancel.signal, resolver: () => resolver })));
    await waitFor('both queries at the server', async () => (silent.queries.length - before >= 2 ? true : undefined));
    assert.equal(resolver.cancels, 0);
    cancel.abort();
    const err = await pending;
    assert.equal(err.code, 'timeout');
    assert.equal(resolver.cancels, 1);
  });
});

describe('answers', () => {
  test('the connection goes to the A answer', async () => {
    const res = await outboundRequest(`http://site.example:${port}/`, opts());
    assert.equal(res.status, 200);
    assert.equal(res.address, '127.0.0.1');
    assert.equal(res.body.toString(), 'hello from 127.0.0.1');
  });

  test('AAAA answers are asked for and vetted too: an internal one refuses the name', async () => {
    const err = await failure(outboundRequest(`http://mixed.example:${port}/`, opts()));
    assert.equal(err.code, 'url_not_public');
    assert.equal(err.detail, 'the host mixed.example resolves to ::1: private, loopback or reserved');
    // Private networks allowed: both answers pass and IPv4 is used.
    const res = await outboundRequest(`http://mixed.example:${port}/`, opts({ allowPrivate: true }));
    assert.equal(res.address, '127.0.0.1');
  });

  test('localhost and .invalid names are answered without asking DNS', async () => {
    const before = silent.queries.length;
    const resolver = () => silent.resolver();
    const res = await outboundRequest(`http://localhost:${port}/`, opts({ allowPrivate: true, resolver }));
    assert.equal(res.status, 200);
    assert.equal((await failure(outboundRequest(`http://LocalHost.:${port}/`, opts({ allowAddress: undefined, resolver })))).code, 'url_not_public');
    const invalid = await failure(outboundRequest(`http://no.such.invalid:${port}/`, opts({ allowPrivate: true, resolver })));
    assert.equal(invalid.code, 'url_not_public');
    assert.equal(silent.queries.length, before);
  });
});

describe('what callers are told', () => {
  test('a name that does not resolve and one that resolves inside get the same code and message; the log says which', async () => {
    const nowhere = await failure(outboundRequest(`http://nowhere.example:${port}/`, opts()));
    const inside = await failure(outboundRequest(`http://inside.example:${port}/`, opts()));
    const literal = await failure(outboundRequest(`http://127.0.0.2:${port}/`, opts()));
    for (const [err, host] of [
      [nowhere, 'nowhere.example'],
      [inside, 'inside.example'],
      [literal, '127.0.0.2'],
    ] as const) {
      assert.equal(err.code, 'url_not_public');
      assert.equal(err.message, `the host ${host} does not resolve to a public address`);
    }
    assert.equal(nowhere.detail, 'the host nowhere.example does not resolve (A: ENOTFOUND, AAAA: ENOTFOUND)');
    assert.equal(inside.detail, 'the host inside.example resolves to 127.0.0.2: private, loopback or reserved');

    const sink = new LogSink();
    const logger = testLogger('warn', sink);
    logRefusal(logger, nowhere, { url_host: 'nowhere.example' });
    logRefusal(logger, inside, { url_host: 'inside.example' });
    logRefusal(logger, new OutboundError('too_large', 'the response is larger than 1 bytes'));
    const lines = sink.lines.map((l) => JSON.parse(l) as { msg: string; cause: string; url_host: string });
    assert.deepEqual(
      lines.map((l) => [l.msg, l.url_host, l.cause]),
      [
        ['outbound host refused', 'nowhere.example', nowhere.detail],
        ['outbound host refused', 'inside.example', inside.detail],
      ],
    );
  });
});
