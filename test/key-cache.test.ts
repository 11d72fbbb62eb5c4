// KeyCache on its own (src/auth/key-cache.ts), with its clock in the test's hands: the age bound,
// the invalidations, the listening switch, and reads that began before an invalidation.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { KeyCache } from '../src/auth/key-cache.js';
import type { KeyContext } from '../src/auth/repository.js';

function ctx(teamId: string, keyId = `key-${teamId}`): KeyContext {
  return {
    keyId,
    keyName: keyId,
    prefix: 'abcdefgh',
    keyHash: Buffer.alloc(32),
    scopes: ['read'],
    rateLimitPerMinute: 60,
    teamId,
    teamName: teamId,
    plan: 'pro',
    memberId: 'm',
    role: 'owner',
    rateTokens: 60,
    taken: 1,
  };
}

function cacheAt(maxAgeMs = 5000, maxEntries = 50_000) {
  const clock = { now: 1_000_000 };
  const cache = new KeyCache(maxAgeMs, maxEntries, () => clock.now);
  cache.setListening(true);
  return { cache, clock };
}

describe('KeyCache', () => {
  test('an entry is served up to its age bound and not a millisecond after', () => {
    const { cache, clock } = cacheAt(5000);
    cache.put('k1', ctx('t1'), cache.ticket());
    clock.now += 5000;
    assert.equal(cache.get('k1')?.value.teamId, 't1');
    clock.now += 1;
    assert.equal(cache.get('k1'), null);
    assert.equal(cache.size, 0, 'the stale entry is dropped');
  });

  test("a team's invalidation drops its keys only", () => {
    const { cache } = cacheAt();
    cache.put('a1', ctx('ta', 'a1'), cache.ticket());
    cache.put('a2', ctx('ta', 'a2'), cache.ticket());
    cache.put('b1', ctx('tb', 'b1'), cache.ticket());
    cache.invalidateTeam('ta');
    assert.equal(cache.get('a1'), null);
    assert.equal(cache.get('a2'), null);
    assert.equal(cache.get('b1')?.value.keyId, 'b1');
  });

  test('a read that began before an invalidation of its team, or of all, is not kept; one that began after is', () => {
    const { cache } = cacheAt();
    const early = cache.ticket();
    cache.invalidateTeam('ta');
    cache.put('a1', ctx('ta'), early);
    assert.equal(cache.get('a1'), null, 'what the invalidation removed came back');
    // Another team's invalidation does not hold back this team's reads.
    cache.put('b1', ctx('tb'), early);
    assert.equal(cache.get('b1')?.value.teamId, 'tb');

    const before = cache.ticket();
    cache.clear();
    cache.put('b2', ctx('tb', 'b2'), before);
    assert.equal(cache.get('b2'), null);

    const late = cache.ticket();
    cache.put('a1', ctx('ta'), late);
    assert.equal(cache.get('a1')?.value.teamId, 'ta');
  });

  test('while not listening nothing is kept or served; each change of the connection empties it', () => {
    const { cache } = cacheAt();
    cache.put('k1', ctx('t1'), cache.ticket());
    cache.setListening(false);
    assert.equal(cache.get('k1'), null);
    cache.put('k2', ctx('t2'), cache.ticket());
    assert.equal(cache.size, 0);
    cache.setListening(true);
    assert.equal(cache.get('k1'), null, 'what was cached before the connection dropped stays dropped');
    cache.put('k3', ctx('t3'), cache.ticket());
    assert.equal(cache.get('k3')?.value.teamId, 't3');
  });

  test('entries are bounded: past the bound the oldest goes', () => {
    const { cache } = cacheAt(5000, 3);
    for (const k of ['k1', 'k2', 'k3', 'k4']) cache.put(k, ctx(`t-${k}`, k), cache.ticket());
    assert.equal(cache.size, 3);
    assert.equal(cache.get('k1'), null);
    assert.equal(cache.get('k4')?.value.keyId, 'k4');
  });

  test('remembered invalidations are bounded too: past the bound, one clear stands for them all', () => {
    const { cache } = cacheAt(5000, 2);
    const early = cache.ticket();
    for (const t of ['t1', 't2', 't3']) cache.invalidateTeam(t);
    cache.put('k', ctx('t9'), early);
    assert.equal(cache.get('k'), null, 'a read from before the clear is refused');
    cache.put('k', ctx('t9'), cache.ticket());
    assert.equal(cache.get('k')?.value.teamId, 't9');
  });

  test('0 as the age bound turns the cache off', () => {
    const { cache } = cacheAt(0);
    cache.put('k1', ctx('t1'), cache.ticket());
    assert.equal(cache.get('k1'), null);
  });
});
