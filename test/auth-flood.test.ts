// A flood of bad API keys waits its turn (TOOLRUN_UNRECOGNISED_KEYS_PER_SECOND) while keys in use
// are served at once, and one client's flood waits behind its own queue while other clients' new
// keys take their turns; a valid key's prefix with a wrong secret takes the same lane as an
// unknown key. bench/keys.ts measures the effect on throughput; this proves the mechanism.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { clientGroup } from '../src/auth/client-address.js';
import { generateKey } from '../src/auth/keys.js';
import { UnrecognisedKeyGate } from '../src/auth/unrecognised-keys.js';
import type { ErrorBody } from '../src/core/errors.js';
import { assertError, type AnsweredRequest } from './helpers/error-envelope.js';
import { bearer, makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { createTestApp } from './helpers/app.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { socketRequest } from './helpers/socket-request.js';
import { waitFor } from './helpers/worker.js';

describe('UnrecognisedKeyGate', { timeout: 30_000 }, () => {
  test('a burst of one second goes at once; beyond it, lookups queue, and are refused past the longest wait', async () => {
    const gate = new UnrecognisedKeyGate(2, { maxWaitMs: 1400, maxInFlight: Infinity });
    // At 2 a second with a one-second burst, two lookups at the same instant go at once.
    assert.deepEqual([await gate.admit('a'), await gate.admit('a')], [null, null]);
    // The next two queue (their turns come within a second); the fifth's (1.5 s) would not: refused at once,
    // with this client's share of the rate (2 a second, alone: 120 a minute).
    const queued = [gate.admit('a'), gate.admit('a')];
    assert.deepEqual(gate.queued, { lookups: 2, clients: 1 });
    assert.deepEqual(await gate.admit('a'), { retryAfterSeconds: 2, limitPerMinute: 120 });
    assert.deepEqual(await Promise.all(queued), [null, null]);
    assert.deepEqual(gate.queued, { lookups: 0, clients: 0 });
  });

  test('at most maxInFlight lookups at once: the next one goes when one has its answer', async () => {
    const gate = new UnrecognisedKeyGate(100, { maxWaitMs: 1000, maxInFlight: 2 });
    assert.deepEqual([await gate.admit('a'), await gate.admit('b')], [null, null]);
    // The rate would allow a third at once; two are in flight, so it waits (and so does a fourth).
    let third: unknown = 'waiting';
    const turn = gate.admit('c').then((r) => (third = r));
    const fourth = gate.admit('d');
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(third, 'waiting');
    assert.deepEqual(gate.queued, { lookups: 2, clients: 2 });
    gate.lookupDone();
    await turn;
    assert.equal(third, null);
    assert.deepEqual(gate.queued, { lookups: 1, clients: 1 });
    // One still waiting past the longest wait (nothing finished meanwhile) is refused then.
    assert.deepEqual(await fourth, { retryAfterSeconds: 1, limitPerMinute: 6000 });
  });

  test('clients take turns: one client\'s queue never holds another\'s lookup back beyond one turn each', async () => {
    const gate = new UnrecognisedKeyGate(20, { maxWaitMs: 2000, maxInFlight: Infinity });
    const order: string[] = [];
    const admit = (client: string) => gate.admit(client).then((r) => (r ? 'refused' : order.push(client)));
    // The flood takes the burst and fills its own queue (up to two seconds of the whole rate).
    const flood = Array.from({ length: 80 }, () => admit('flood'));
    assert.deepEqual(gate.queued, { lookups: 40, clients: 1 });
    const other = [admit('other'), admit('other'), admit('other')];
    // With two clients waiting, the other client's three lookups are within its share.
    assert.deepEqual(gate.queued, { lookups: 43, clients: 2 });
    const results = await Promise.all([...flood, ...other]);
    // The flood's 20 lookups past its queue were refused at once (its last ones may also run out
    // of time, now that it shares the rate); the other client's never.
    assert.ok(results.filter((r) => r === 'refused').length >= 20);
    const queuedOrder = order.slice(20);
    const others = queuedOrder.flatMap((c, i) => (c === 'other' ? [i] : []));
    // Served alternately: the other client's lookups are the 2nd, 4th and 6th to leave the queues.
    assert.deepEqual(others, [1, 3, 5], queuedOrder.join(' '));
  });

  test('a lookup still waiting after the longest wait (another client came to share) is refused then', async () => {
    const gate = new UnrecognisedKeyGate(1, { maxWaitMs: 2500, maxInFlight: Infinity });
    assert.equal(await gate.admit('a'), null);
    // Alone, a's next two lookups are one and two turns away: within 2.5 s, so they queue.
    const a1 = gate.admit('a');
    const a2 = gate.admit('a');
    // b's first lookup comes after one of a's at most: it queues too, and takes its turn before a2.
    const b = gate.admit('b');
    assert.deepEqual(gate.queued, { lookups: 3, clients: 2 });
    assert.equal(await a1, null);
    assert.equal(await b, null);
    // a2's turn would have been the third second: it has waited its 2.5 s by then, and is refused.
    assert.deepEqual(await a2, { retryAfterSeconds: 1, limitPerMinute: 60 });
    assert.deepEqual(gate.queued, { lookups: 0, clients: 0 });
  });

  test('clients are told apart by address: IPv4 as it is (also IPv4-mapped), IPv6 by its /64', () => {
    assert.equal(clientGroup('127.0.0.2'), '127.0.0.2');
    assert.equal(clientGroup('::ffff:127.0.0.2'), '127.0.0.2');
    assert.equal(clientGroup('::FFFF:7f00:2'), '127.0.0.2');
    const same = ['2001:db8:1:2::1', '2001:DB8:1:2:aaaa:bbbb:cccc:dddd', '2001:db8:1:2:0:0:0:ffff', '2001:db8:1:2::192.0.2.1'];
    for (const a of same) assert.equal(clientGroup(a), '2001:db8:1:2::/64', a);
    assert.equal(clientGroup('2001:db8:1:3::1'), '2001:db8:1:3::/64');
    assert.equal(clientGroup('::1'), '0:0:0:0::/64');
    assert.equal(clientGroup('1::'), '1:0:0:0::/64');
    assert.equal(clientGroup('fe80::1%eth0'), 'fe80:0:0:0::/64');
    assert.equal(clientGroup(undefined), '?');
    assert.equal(clientGroup('not an address'), 'not an address');
  });

  test('0 a second is no limit', async () => {
    const gate = new UnrecognisedKeyGate(0, { maxWaitMs: 0 });
    for (let i = 0; i < 100; i++) assert.equal(await gate.admit('a'), null);
  });

  test('keys seen valid are remembered for recentMs, the oldest dropped first, and forgotten on failure', () => {
    const gate = new UnrecognisedKeyGate(1, { recentMs: 100, maxRecent: 2 });
    gate.markValid('a', 0);
    assert.equal(gate.isRecent('a', 50), true);
    assert.equal(gate.isRecent('a', 150), false);
    gate.markValid('a', 200);
    gate.markValid('b', 200);
    gate.markValid('c', 200);
    assert.deepEqual(['a', 'b', 'c'].map((k) => gate.isRecent(k, 250)), [false, true, true]);
    gate.forget('b');
    assert.equal(gate.isRecent('b', 250), false);
  });

  test('a key seen valid again is renewed only once half its time has passed (not on every request)', () => {
    const gate = new UnrecognisedKeyGate(1, { recentMs: 100 });
    gate.markValid('k', 0);
    gate.markValid('k', 40); // 60 ms left, more than half: kept as it was
    assert.equal(gate.isRecent('k', 99), true);
    assert.equal(gate.isRecent('k', 101), false);
    gate.markValid('k', 200);
    gate.markValid('k', 260); // 40 ms left: renewed to 360
    assert.equal(gate.isRecent('k', 350), true);
  });
});

describe('a flood of bad keys against a real server', { timeout: 120_000 }, () => {
  let s: TestServer;
  let team: TeamFixture;
  before(async () => {
    s = await startTestServer({ env: { TOOLRUN_UNRECOGNISED_KEYS_PER_SECOND: '3' } });
    team = await makeTeam(s.database.db, { rate: 300 });
  });
  after(() => s.close());

  async function get(key: string): Promise<{ status: number; code: string | null; retryAfter: string | null }> {
    const res = await fetch(`${s.url}/v1/me`, { headers: bearer(key) });
    const body = (await res.json()) as Partial<ErrorBody>;
    // No key is known: the limit is this client's share of 3 lookups a second (alone: 180 a minute).
    if (res.status === 429) assert.deepEqual(body.error?.details, { limit_per_minute: 180, reason: 'unrecognised_keys' });
    if (body.error) assert.equal(body.error.request_id, res.headers.get('x-request-id'));
    return { status: res.status, code: body.error?.code ?? null, retryAfter: res.headers.get('retry-after') };
  }

  test('bad keys queue and then get 429, both kinds alike, while a key in use is answered first', async () => {
    assert.equal((await get(team.key)).status, 200); // the key is now one this server has seen
    const wrongSecret = () => `${team.key.slice(0, 17)}${generateKey('svc_test_').key.slice(17)}`;
    const unknown = () => generateKey('svc_test_').key;
    const order: string[] = [];
    const flood = Array.from({ length: 24 }, (_, i) => {
      const kind = i % 2 ? 'wrong secret' : 'unknown prefix';
      return get(i % 2 ? wrongSecret() : unknown()).then((r) => {
        order.push('bad');
        return { kind, ...r };
      });
    });
    const valid = get(team.key).then((r) => {
      order.push('valid');
      return r;
    });
    const [answers, mine] = await Promise.all([Promise.all(flood), valid]);
    assert.equal(mine.status, 200);
    // The key in use did not wait behind the queue of bad keys.
    assert.ok(order.indexOf('valid') < order.lastIndexOf('bad'), order.join(' '));
    for (const a of answers) {
      assert.ok((a.status === 401 && a.code === 'invalid_api_key') || (a.status === 429 && a.code === 'rate_limited'), JSON.stringify(a));
      if (a.status === 429) assert.ok(Number(a.retryAfter) >= 1, JSON.stringify(a));
    }
    const count = (kind: string, status: number) => answers.filter((a) => a.kind === kind && a.status === status).length;
    // At 3 a second, some go through (a burst, then what fits in the longest wait) and the rest are refused.
    assert.ok(count('wrong secret', 401) + count('unknown prefix', 401) >= 3, JSON.stringify(answers));
    for (const kind of ['wrong secret', 'unknown prefix']) assert.ok(count(kind, 429) > 0, `${kind} never refused: ${JSON.stringify(answers)}`);
  });

  test('a key seen for the first time waits its turn like any other, then joins the keys in use', async () => {
    const fresh = await makeTeam(s.database.db, { rate: 300 });
    // Its first request takes a turn: answered once the queue the last test left has drained
    // (until then it may be told to retry, as any unrecognised key would).
    await waitFor('the first request of a new key to pass', async () => ((await get(fresh.key)).status === 200 ? true : undefined), 30_000);
    const order: string[] = [];
    const flood = Array.from({ length: 12 }, () => get(generateKey('svc_test_').key).then(() => order.push('bad')));
    const mine = get(fresh.key).then((r) => {
      order.push('fresh');
      return r;
    });
    await Promise.all([...flood, mine]);
    assert.equal((await mine).status, 200);
    assert.ok(order.indexOf('fresh') < order.lastIndexOf('bad'), order.join(' '));
  });
});

/** Sends waves of requests until stopped; answers are kept as they come. */
function startFlood(send: () => Promise<AnsweredRequest>, wave = 24) {
  let stopped = false;
  const answers: AnsweredRequest[] = [];
  const running = (async () => {
    while (!stopped) await Promise.all(Array.from({ length: wave }, () => send().then((r) => answers.push(r))));
  })();
  return {
    answers,
    async stop(): Promise<AnsweredRequest[]> {
      stopped = true;
      await running;
      return answers;
    },
  };
}

/** The flood's answers: 401 for the lookups that went, 429 with this client's share for the rest. */
function assertFloodAnswers(answers: AnsweredRequest[]): void {
  const refused = answers.filter((r) => r.statusCode === 429);
  assert.ok(refused.length > 0, 'the flood was never refused');
  for (const r of refused) {
    const details = assertError(r, 429, 'rate_limited').details;
    // 3 lookups a second, shared by one or two clients waiting: 180 or 90 a minute.
    assert.ok(details && [90, 180].includes(Number(details.limit_per_minute)), JSON.stringify(details));
    assert.equal(details?.reason, 'unrecognised_keys');
  }
  for (const r of answers.filter((x) => x.statusCode !== 429)) assertError(r, 401, 'invalid_api_key');
}

describe('one client\'s flood does not hold back another client\'s new keys (real sockets)', { timeout: 120_000 }, () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer({ env: { TOOLRUN_UNRECOGNISED_KEYS_PER_SECOND: '3', TOOLRUN_TRUST_PROXY: 'loopback' } });
  });
  after(() => s.close());

  /** Valid keys this server has never seen, two at a time, while the flood is being refused. */
  async function newKeysAnswered(floodRefused: () => boolean, send: (key: string) => Promise<AnsweredRequest>): Promise<AnsweredRequest[]> {
    const fresh = await Promise.all(Array.from({ length: 6 }, () => makeTeam(s.database.db, { rate: 300 })));
    await waitFor('the flood to be refused', async () => (floodRefused() ? true : undefined), 30_000);
    const answers: AnsweredRequest[] = [];
    for (let i = 0; i < fresh.length; i += 2) answers.push(...(await Promise.all(fresh.slice(i, i + 2).map((f) => send(f.key)))));
    return answers;
  }

  test('random keys flooding from 127.0.0.1 get 429; valid unseen keys from 127.0.0.2 get none', async () => {
    const flood = startFlood(() => socketRequest(s.url, '/v1/me', { headers: bearer(generateKey('svc_test_').key), localAddress: '127.0.0.1' }));
    const answers = await newKeysAnswered(
      () => flood.answers.some((r) => r.statusCode === 429),
      (key) => socketRequest(s.url, '/v1/me', { headers: bearer(key), localAddress: '127.0.0.2' }),
    );
    assertFloodAnswers(await flood.stop());
    for (const r of answers) assert.equal(r.statusCode, 200, r.body);
  });

  test('behind a trusted proxy the client is X-Forwarded-For, IPv6 by its /64: a flood from one /64 is one client', async () => {
    const random64 = () => Array.from({ length: 4 }, () => Math.floor(Math.random() * 0x10000).toString(16)).join(':');
    const flood = startFlood(() =>
      socketRequest(s.url, '/v1/me', { headers: { ...bearer(generateKey('svc_test_').key), 'x-forwarded-for': `2001:db8:1:2:${random64()}` } }),
    );
    const answers = await newKeysAnswered(
      () => flood.answers.some((r) => r.statusCode === 429),
      (key) => socketRequest(s.url, '/v1/me', { headers: { ...bearer(key), 'x-forwarded-for': '198.51.100.7, 2001:db8:1:3::1' } }),
    );
    assertFloodAnswers(await flood.stop());
    for (const r of answers) assert.equal(r.statusCode, 200, r.body);
  });
});

describe('TOOLRUN_TRUST_PROXY decides the client address', () => {
  /** The `ip` the request's log line gives, for a request from 10.0.0.1 through the proxies named. */
  async function clientIp(trust: string | null, forwardedFor: string): Promise<string> {
    const t = await createTestApp(trust === null ? {} : { env: { TOOLRUN_TRUST_PROXY: trust } });
    try {
      const res = await t.app.inject({ method: 'GET', url: '/v1/me', remoteAddress: '10.0.0.1', headers: { 'x-forwarded-for': forwardedFor } });
      assertError(res, 401, 'api_key_required');
      const line = t.logs.lines.map((l) => JSON.parse(l) as { request_id?: string; req?: { ip?: string } }).find((l) => l.request_id === res.headers['x-request-id'] && l.req?.ip);
      assert.ok(line?.req?.ip, t.logs.text());
      return line.req.ip;
    } finally {
      await t.close();
    }
  }

  test('unset: the peer of the connection, whatever X-Forwarded-For says', async () => {
    assert.equal(await clientIp(null, '203.0.113.9'), '10.0.0.1');
  });

  test('a hop count believes that many proxies, from the nearest', async () => {
    assert.equal(await clientIp('1', '203.0.113.9, 198.51.100.4'), '198.51.100.4');
    assert.equal(await clientIp('2', '203.0.113.9, 198.51.100.4'), '203.0.113.9');
  });

  test('a list believes only the proxies in it', async () => {
    assert.equal(await clientIp('10.0.0.0/8', '203.0.113.9, 198.51.100.4'), '198.51.100.4');
    assert.equal(await clientIp('192.0.2.0/24', '203.0.113.9'), '10.0.0.1');
  });
});
