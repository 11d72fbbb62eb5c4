// A flood of bad API keys waits its turn (TOOLRUN_UNRECOGNISED_KEYS_PER_SECOND) while keys in use
// are served at once; a valid key's prefix with a wrong secret takes the same lane as an unknown
// key. bench/keys.ts measures the effect on throughput; this proves the mechanism.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { generateKey } from '../src/auth/keys.js';
import { UnrecognisedKeyGate } from '../src/auth/unrecognised-keys.js';
import type { ErrorBody } from '../src/http/errors.js';
import { bearer, makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { waitFor } from './helpers/worker.js';

describe('UnrecognisedKeyGate', { timeout: 30_000 }, () => {
  test('a burst of one second goes at once; beyond it, turns are spaced, and refused past the longest wait', async () => {
    const gate = new UnrecognisedKeyGate(2, { maxWaitMs: 0 });
    // At 2 a second with a one-second burst, three lookups at the same instant go (the third just in time).
    assert.deepEqual([await gate.admit(1000), await gate.admit(1000), await gate.admit(1000)], [0, 0, 0]);
    // The fourth would wait 500 ms, more than it may: refused, retry in 1 s, and it took no turn.
    assert.equal(await gate.admit(1000), 1);
    assert.equal(await gate.admit(1000), 1);
    // 600 ms on, the next turn is due.
    assert.equal(await gate.admit(1600), 0);
    assert.equal(await gate.admit(1600), 1);
  });

  test('0 a second is no limit', async () => {
    const gate = new UnrecognisedKeyGate(0, { maxWaitMs: 0 });
    for (let i = 0; i < 100; i++) assert.equal(await gate.admit(1000), 0);
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
    if (res.status === 429) assert.deepEqual(body.error?.details, { limit_per_minute: null, reason: 'unrecognised_keys' });
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
