// Sign-in throttling (issue 25, items 3 and 5): failures count per (account, client group) and per
// client group, where a client group is an IPv4 address or an IPv6 /64; the account as a whole
// only slows down (progressive delay, one queue per account across concurrent tries, bounded), and
// a browser that signed in before (its device cookie) is never refused because of failures from
// elsewhere.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import {
  signInDelayMs,
  SIGN_IN_ATTEMPTS_PER_ADDRESS,
  SIGN_IN_ATTEMPTS_PER_CLIENT,
  SIGN_IN_ATTEMPTS_PER_DEVICE,
  SIGN_IN_FREE_FAILURES,
  SIGN_IN_MAX_DELAY_MS,
  SIGN_IN_MAX_QUEUE_MS,
} from '../src/console/throttle.js';
import { ConsoleClient, inviteAndSignIn, STRONG_PASSWORD } from './helpers/console.js';
import { consoleSuite } from './helpers/console-suite.js';
import type { AnsweredRequest } from './helpers/error-envelope.js';
import { assertError } from './helpers/error-envelope.js';
import { makeTeam } from './helpers/fixtures.js';
import { waitFor } from './helpers/process.js';
import { startTestServer } from './helpers/server.js';

const { database, db, url } = consoleSuite();

async function owner() {
  const team = await makeTeam(db());
  return inviteAndSignIn(url(), db(), team.memberId);
}

/** The toolrun_device cookie a response sets, or null. */
function deviceCookieOf(res: AnsweredRequest): { value: string; attributes: string } | null {
  const raw = res.headers['set-cookie'];
  const line = (Array.isArray(raw) ? raw : raw === undefined ? [] : [String(raw)]).find((l) => l.startsWith('toolrun_device='));
  if (!line) return null;
  const [pair = '', ...rest] = line.split(';');
  return { value: pair.slice('toolrun_device='.length), attributes: rest.map((a) => a.trim()).join('; ') };
}

/** One sign-in from a new connection at `from`, presenting a device cookie when given. */
function attempt(email: string, password: string, opts: { from?: string; device?: string | null; base?: string; headers?: Record<string, string> } = {}) {
  const client = new ConsoleClient(opts.base ?? url(), opts.from ? { localAddress: opts.from } : {});
  return client.call('POST', '/console/api/session', { email, password }, { ...(opts.device ? { cookie: `toolrun_device=${opts.device}` } : {}), ...opts.headers });
}

async function timed<T>(f: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const t0 = performance.now();
  const value = await f();
  return { value, ms: performance.now() - t0 };
}

/** Fails `count` sign-ins for the email from one address, asserting each is a plain 401. */
async function fail(email: string, count: number, from: string): Promise<void> {
  for (let i = 0; i < count; i++) assertError(await attempt(email, `wrong password ${i}`, { from }), 401, 'invalid_credentials');
}

describe('failures from elsewhere never lock the member out (item 3)', () => {
  test('an attacker fails 10 times from one address and many more from others: a device cookie signs in at once, a fresh client after a bounded delay', async () => {
    const m = await owner();
    const first = await attempt(m.email, STRONG_PASSWORD, { from: '127.0.0.3' });
    assert.equal(first.statusCode, 200, first.body);
    const device = deviceCookieOf(first)?.value;
    assert.ok(device && device.length >= 43, 'a successful sign-in sets a device cookie');

    await fail(m.email, SIGN_IN_ATTEMPTS_PER_CLIENT, '127.0.0.20');
    // The attacker's own client is refused for this account once it has had its share.
    const refused = assertError(await attempt(m.email, 'one more guess', { from: '127.0.0.20' }), 429, 'rate_limited');
    assert.equal(refused.details?.reason, 'sign_in_attempts');
    // More from other addresses; then, standing for a long attack from many (each past failure
    // beyond the free ones slows every next try, so sending them all here would take minutes):
    await fail(m.email, 2, '127.0.0.21');
    await db().pool.query("UPDATE console_signin_attempts SET attempts = attempts + 1000 WHERE bucket = $1::text", [`account:${m.email}`]);

    // The member's browser, with its device cookie, from its address or a new one: no wait at all.
    const trusted = await timed(() => attempt(m.email, STRONG_PASSWORD, { from: '127.0.0.3', device }));
    assert.equal(trusted.value.statusCode, 200, trusted.value.body);
    assert.ok(trusted.ms < SIGN_IN_MAX_DELAY_MS / 2, `device cookie sign-in took ${trusted.ms} ms`);
    // Even from the attacker's own address (one office behind one NAT, say).
    const sameNat = await attempt(m.email, STRONG_PASSWORD, { from: '127.0.0.20', device: deviceCookieOf(trusted.value)?.value ?? null });
    assert.equal(sameNat.statusCode, 200, sameNat.body);

    // A client never seen before: the right password still signs in, after the capped delay.
    const fresh = await timed(() => attempt(m.email, STRONG_PASSWORD, { from: '127.0.0.4' }));
    assert.equal(fresh.value.statusCode, 200, fresh.value.body);
    assert.ok(fresh.ms >= SIGN_IN_MAX_DELAY_MS - 50, `fresh client waited only ${fresh.ms} ms`);
    assert.ok(fresh.ms < SIGN_IN_MAX_DELAY_MS + 5_000, `fresh client waited ${fresh.ms} ms`);
    assert.ok(deviceCookieOf(fresh.value), 'and is given a device cookie');
  });

  test('the delay grows with the failures on the account and stops at the cap', async () => {
    assert.equal(signInDelayMs(0), 0);
    assert.equal(signInDelayMs(SIGN_IN_FREE_FAILURES - 1), 0);
    assert.ok(signInDelayMs(SIGN_IN_FREE_FAILURES) > 0);
    assert.ok(signInDelayMs(SIGN_IN_FREE_FAILURES + 1) > signInDelayMs(SIGN_IN_FREE_FAILURES));
    assert.equal(signInDelayMs(SIGN_IN_FREE_FAILURES + 100), SIGN_IN_MAX_DELAY_MS);
    assert.equal(signInDelayMs(1_000_000), SIGN_IN_MAX_DELAY_MS);

    const m = await owner();
    // Failures from many clients: none of them is refused, the account only slows down.
    for (let i = 0; i < SIGN_IN_FREE_FAILURES; i++) assertError(await attempt(m.email, 'wrong guess', { from: `127.0.1.${i + 1}` }), 401, 'invalid_credentials');
    const slowed = await timed(() => attempt(m.email, 'wrong guess', { from: '127.0.1.200' }));
    assertError(slowed.value, 401, 'invalid_credentials');
    assert.ok(slowed.ms >= signInDelayMs(SIGN_IN_FREE_FAILURES) - 20, `the first failure past the free ones waited ${slowed.ms} ms`);
    // The window ends: no more delay.
    await db().pool.query("UPDATE console_signin_attempts SET window_started_at = now() - interval '16 minutes'");
    const later = await timed(() => attempt(m.email, STRONG_PASSWORD, { from: '127.0.1.201' }));
    assert.equal(later.value.statusCode, 200, later.value.body);
    assert.ok(later.ms < SIGN_IN_MAX_DELAY_MS / 2, `${later.ms} ms`);
  });

  test('the device cookie: HttpOnly, SameSite=Strict, only sent to sign-in, 90 days, Secure under https; kept as a hash', async () => {
    const m = await owner();
    const res = await attempt(m.email, STRONG_PASSWORD);
    const cookie = deviceCookieOf(res);
    assert.ok(cookie);
    assert.equal(cookie.attributes, 'Path=/console/api/session; Max-Age=7776000; HttpOnly; SameSite=Strict');
    const { rows } = await db().pool.query<{ account: string }>('SELECT account FROM console_devices WHERE token_hash = $1::bytea', [
      createHash('sha256').update(cookie.value).digest(),
    ]);
    assert.deepEqual(rows, [{ account: m.email.toLowerCase() }]);

    const https = await startTestServer({ database: database(), env: { PUBLIC_BASE_URL: 'https://console.example.test' } });
    try {
      const r = await attempt(m.email, STRONG_PASSWORD, { base: https.url, headers: { origin: 'https://console.example.test' } });
      assert.equal(r.statusCode, 200, r.body);
      assert.equal(deviceCookieOf(r)?.attributes, 'Path=/console/api/session; Max-Age=7776000; HttpOnly; SameSite=Strict; Secure');
    } finally {
      await https.close();
    }
  });

  test("a device cookie counts for its own account only, and an unknown or expired one for nothing", async () => {
    const a = await owner();
    const b = await owner();
    const deviceOfA = deviceCookieOf(await attempt(a.email, STRONG_PASSWORD, { from: '127.0.2.1' }))?.value ?? null;
    assert.ok(deviceOfA);
    await fail(b.email, SIGN_IN_ATTEMPTS_PER_CLIENT, '127.0.2.1');
    assertError(await attempt(b.email, STRONG_PASSWORD, { from: '127.0.2.1', device: deviceOfA }), 429, 'rate_limited');
    assertError(await attempt(b.email, STRONG_PASSWORD, { from: '127.0.2.1', device: 'x'.repeat(43) }), 429, 'rate_limited');
    await fail(a.email, SIGN_IN_ATTEMPTS_PER_CLIENT, '127.0.2.1');
    await db().pool.query("UPDATE console_devices SET expires_at = now() - interval '1 second' WHERE account = $1::text", [a.email.toLowerCase()]);
    assertError(await attempt(a.email, STRONG_PASSWORD, { from: '127.0.2.1', device: deviceOfA }), 429, 'rate_limited');
  });

  test('a device cookie has its own share of failures; past it, its client counts like any other', async () => {
    const m = await owner();
    const device = deviceCookieOf(await attempt(m.email, STRONG_PASSWORD, { from: '127.0.3.1' }))?.value ?? null;
    assert.ok(device);
    for (let i = 0; i < SIGN_IN_ATTEMPTS_PER_DEVICE; i++) {
      assertError(await attempt(m.email, `stolen cookie guess ${i}`, { from: '127.0.3.9', device }), 401, 'invalid_credentials');
    }
    // No endless guesses with a stolen cookie: now its client's own bucket counts.
    await fail(m.email, SIGN_IN_ATTEMPTS_PER_CLIENT, '127.0.3.9');
    assertError(await attempt(m.email, STRONG_PASSWORD, { from: '127.0.3.9', device }), 429, 'rate_limited');
  });

  test(`a client's ${SIGN_IN_ATTEMPTS_PER_CLIENT} failures on an account refuse that client for that account only, until the window ends`, async () => {
    const m = await owner();
    await fail(m.email, SIGN_IN_ATTEMPTS_PER_CLIENT, '127.0.5.1');
    const res = await attempt(m.email, STRONG_PASSWORD, { from: '127.0.5.1' });
    assertError(res, 429, 'rate_limited');
    const retry = Number(res.headers['retry-after']);
    assert.ok(retry >= 1 && retry <= 900, `Retry-After ${retry}`);
    // Another account from the same address is not refused, nor this account from elsewhere.
    const other = await owner();
    assert.equal((await attempt(other.email, STRONG_PASSWORD, { from: '127.0.5.1' })).statusCode, 200);
    assert.equal((await attempt(m.email, STRONG_PASSWORD, { from: '127.0.5.2' })).statusCode, 200);
    await db().pool.query("UPDATE console_signin_attempts SET window_started_at = now() - interval '16 minutes'");
    assert.equal((await attempt(m.email, STRONG_PASSWORD, { from: '127.0.5.1' })).statusCode, 200);
  });

  test('successful sign-ins do not count towards the limits', async () => {
    const m = await owner();
    for (let i = 0; i < SIGN_IN_ATTEMPTS_PER_CLIENT + 2; i++) await new ConsoleClient(url(), { localAddress: '127.0.0.4' }).signIn(m.email);
  });
});

describe('per client group (item 5)', () => {
  test(`after ${SIGN_IN_ATTEMPTS_PER_ADDRESS} failures from one address, any account from it gets 429 with Retry-After`, async () => {
    const m = await owner();
    for (let i = 0; i < SIGN_IN_ATTEMPTS_PER_ADDRESS; i++) {
      assertError(await attempt(`guess${i}@example.test`, 'a guessed password', { from: '127.0.4.2' }), 401, 'invalid_credentials');
    }
    const res = await attempt(m.email, STRONG_PASSWORD, { from: '127.0.4.2' });
    assertError(res, 429, 'rate_limited');
    const retry = Number(res.headers['retry-after']);
    assert.ok(retry >= 1 && retry <= 900, `Retry-After ${retry}`);
    // The same account from another address signs in.
    await new ConsoleClient(url()).signIn(m.email);
  });

  test('IPv6 addresses of one /64 are one client', async () => {
    const proxied = await startTestServer({ database: database(), env: { TOOLRUN_TRUST_PROXY: 'loopback' } });
    try {
      const m = await owner();
      const from = (address: string) => ({ base: proxied.url, headers: { 'x-forwarded-for': address } });
      for (let i = 0; i < SIGN_IN_ATTEMPTS_PER_ADDRESS; i++) {
        const address = `2001:db8:1:2:${(i + 1).toString(16)}:${((i * 7919) % 0x10000).toString(16)}:0:1`;
        assertError(await attempt(`guess${i}@example.test`, 'a guessed password', from(address)), 401, 'invalid_credentials');
      }
      assertError(await attempt(m.email, STRONG_PASSWORD, from('2001:db8:1:2:ffff:ffff:ffff:ffff')), 429, 'rate_limited');
      // The next /64 is another client.
      const other = await attempt(m.email, STRONG_PASSWORD, from('2001:db8:1:3::1'));
      assert.equal(other.statusCode, 200, other.body);
    } finally {
      await proxied.close();
    }
  });
});

describe("the account's delay is one queue, whatever the concurrency (item 3)", () => {
  /** The account's row: its failures in the window and the end of its last reserved slot. */
  async function accountRow(email: string): Promise<{ attempts: number; next_at: Date | null }> {
    const { rows } = await db().pool.query<{ attempts: number; next_at: Date | null }>(
      'SELECT attempts, next_at FROM console_signin_attempts WHERE bucket = $1::text',
      [`account:${email}`],
    );
    assert.ok(rows[0], 'the account has a bucket');
    return rows[0];
  }

  async function accountAttempts(email: string): Promise<number> {
    const { rows } = await db().pool.query<{ attempts: number }>('SELECT attempts FROM console_signin_attempts WHERE bucket = $1::text', [`account:${email}`]);
    return rows[0]?.attempts ?? 0;
  }

  test('concurrent wrong tries from many client groups are let through one delay apart, those past the bound refused at once; a device cookie signs in meanwhile', async (t) => {
    // Small delays, so the queue fills in seconds: each try at the cap waits 800 ms more than the one
    // before. Not smaller: an answer comes after its slot plus the password check (scrypt), which
    // varies by a few hundred ms on a loaded machine (a CI run saw 974 and 1201 ms for two slots).
    const delays = { firstDelayMs: 100, maxDelayMs: 800, maxQueueMs: 4_000 };
    const proxied = await startTestServer({ database: database(), env: { TOOLRUN_TRUST_PROXY: 'loopback' }, signInDelays: delays });
    try {
      const m = await owner();
      const from = (address: string) => ({ base: proxied.url, headers: { 'x-forwarded-for': address } });
      const device = deviceCookieOf(await attempt(m.email, STRONG_PASSWORD, from('198.51.100.1')))?.value ?? null;
      assert.ok(device);
      // An attack long under way: the account is at the capped delay.
      await db().pool.query('UPDATE console_signin_attempts SET attempts = attempts + 1000 WHERE bucket = $1::text', [`account:${m.email}`]);

      const n = 12;
      const t0 = performance.now();
      const flood = Array.from({ length: n }, (_, i) =>
        attempt(m.email, `flood guess ${i}`, from(`203.0.113.${i + 1}`)).then((res) => ({ res, at: performance.now() - t0 })),
      );
      // Once the account's queue holds some of them, the member's browser signs in: no queue for it.
      let answers: { res: AnsweredRequest; at: number }[];
      let trusted: { value: AnsweredRequest; ms: number };
      let trustedAt: number;
      try {
        await waitFor('the flood to reach the account', async () => (await accountAttempts(m.email)) >= 1003, 10_000, 10);
        trusted = await timed(() => attempt(m.email, STRONG_PASSWORD, { ...from('198.51.100.1'), device }));
        trustedAt = performance.now() - t0;
      } finally {
        // Every answer is in before the server closes, whatever failed.
        answers = (await Promise.allSettled(flood)).flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
      }
      assert.equal(answers.length, n);
      t.diagnostic(`answers at ${answers.map((a) => `${a.res.statusCode}@${Math.round(a.at)}ms`).join(' ')}; device cookie 200 after ${Math.round(trusted.ms)} ms`);

      assert.equal(trusted.value.statusCode, 200, trusted.value.body);
      const admitted = answers.filter((a) => a.res.statusCode === 401).map((a) => a.at).sort((a, b) => a - b);
      const refused = answers.filter((a) => a.res.statusCode !== 401);
      for (const r of refused) {
        const error = assertError(r.res, 429, 'rate_limited');
        assert.equal(error.details?.reason, 'sign_in_attempts');
        const retry = Number(r.res.headers['retry-after']);
        assert.ok(Number.isInteger(retry) && retry >= 1 && retry <= Math.ceil(delays.maxQueueMs / 1000), `Retry-After ${retry}`);
      }
      // The bound holds whatever the concurrency: about maxQueue / delay tries, the rest refused.
      const bound = delays.maxQueueMs / delays.maxDelayMs;
      assert.ok(admitted.length >= 1 && admitted.length <= bound + 1, `${admitted.length} of ${n} concurrent tries let through`);
      assert.ok(refused.length >= n - bound - 1, `${refused.length} refused`);
      // The tries let through were served one after the other, a delay apart, not all at once: each
      // answer is its slot plus one password check, so half a delay is left for the checks' jitter.
      const first = admitted[0] ?? 0;
      const last = admitted[admitted.length - 1] ?? 0;
      assert.ok(last - first >= (admitted.length - 1) * delays.maxDelayMs - delays.maxDelayMs / 2, `first to last answer ${Math.round(last - first)} ms for ${admitted.length}`);
      // Refused at once, not after waiting in the queue.
      for (const r of refused) assert.ok(r.at < last && r.at < delays.maxQueueMs / 2, `a refusal answered after ${Math.round(r.at)} ms`);
      assert.ok(trustedAt < last && trusted.ms < delays.maxQueueMs / 2, `device cookie sign-in took ${Math.round(trusted.ms)} ms`);
      // A refused try reserved nothing and counted nothing on the account.
      assert.equal(await accountAttempts(m.email), 1000 + admitted.length);
    } finally {
      await proxied.close();
    }
  });

  test(`a try whose slot would be more than ${SIGN_IN_MAX_QUEUE_MS / 1000} s away is refused at once, reserves nothing and is told when a slot frees; a device cookie still signs in`, async () => {
    const m = await owner();
    const device = deviceCookieOf(await attempt(m.email, STRONG_PASSWORD, { from: '127.0.6.1' }))?.value ?? null;
    assert.ok(device);
    // The account at the capped delay, its queue full to 2 s short of the bound: the next slot
    // would end 3 s past it.
    await db().pool.query(
      'UPDATE console_signin_attempts SET attempts = 1000, next_at = now() + make_interval(secs => $2::integer) WHERE bucket = $1::text',
      [`account:${m.email}`, SIGN_IN_MAX_QUEUE_MS / 1000 - 2],
    );
    const queued = await accountRow(m.email);

    for (const password of ['a guess', STRONG_PASSWORD]) {
      const res = await timed(() => attempt(m.email, password, { from: '127.0.6.2' }));
      const error = assertError(res.value, 429, 'rate_limited');
      assert.equal(error.details?.reason, 'sign_in_attempts');
      const retry = Number(res.value.headers['retry-after']);
      const over = (SIGN_IN_MAX_DELAY_MS - 2_000) / 1000;
      assert.ok(Number.isInteger(retry) && retry >= 1 && retry <= over, `Retry-After ${retry}, expected ${over}`);
      assert.ok(res.ms < SIGN_IN_MAX_DELAY_MS / 2, `refused after ${Math.round(res.ms)} ms`);
    }
    assert.deepEqual(await accountRow(m.email), queued);

    const trusted = await timed(() => attempt(m.email, STRONG_PASSWORD, { from: '127.0.6.2', device }));
    assert.equal(trusted.value.statusCode, 200, trusted.value.body);
    assert.ok(trusted.ms < SIGN_IN_MAX_DELAY_MS / 2, `device cookie sign-in took ${Math.round(trusted.ms)} ms`);
  });
});
