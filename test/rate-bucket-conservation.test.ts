// A take from a shared rate bucket reads the clock once. Reading it once for the tokens left,
// again for the tokens granted and again for refilled_at let a take grant a token it did not
// deduct (the clock crossing a whole token between two readings: the topology's 120/min key got
// 132 requests through where 131 could) and lose the refill between readings. Each take here is
// checked for exact conservation: tokens before, plus the refill up to the new refilled_at
// (capped at the bucket), equal tokens after plus tokens granted.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { takeMemberTokens } from '../src/auth/member-buckets.js';
import { hashKey } from '../src/auth/keys.js';
import { authenticateKey } from '../src/auth/repository.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import { makeTeam } from './helpers/fixtures.js';

let database: TestDatabase;
before(async () => {
  database = await createTestDatabase();
});
after(async () => {
  await database.db.close();
});

interface Bucket {
  tokens: number;
  /** Microseconds since the epoch, as stored. */
  at: bigint;
  last_take: number;
}

/** The bucket row `where` picks (a key's or a member's lane), as stored. */
async function bucket(where: string, values: unknown[]): Promise<Bucket> {
  const { rows } = await database.db.pool.query<{ tokens: number; at: string; last_take: number }>(
    `SELECT tokens, (extract(epoch FROM refilled_at) * 1000000)::bigint::text AS at, last_take FROM rate_buckets WHERE ${where}`,
    values,
  );
  const row = rows[0];
  assert.ok(row, `no bucket for ${JSON.stringify(values)}`);
  return { tokens: row.tokens, at: BigInt(row.at), last_take: row.last_take };
}

/** Tokens before plus the refill to the new refilled_at, capped; what a take may split between granted and left. */
function expectedAfter(before: Bucket, afterTake: Bucket, perMinute: number): number {
  const seconds = Number(afterTake.at - before.at) / 1e6;
  return Math.min(perMinute, before.tokens + (Math.max(0, seconds) * perMinute) / 60);
}

describe('rate buckets conserve tokens', () => {
  test('a key: every take grants exactly what it deducts, and the refill is counted to the instant it records', async () => {
    const perMinute = 300; // the highest choice: 5 tokens a second, the most refill between readings
    const team = await makeTeam(database.db, { rate: perMinute });
    const hash = hashKey(team.key);
    let granted = 0;
    const faults: string[] = [];
    for (let i = 0; i < 400; i++) {
      const was = await bucket('key_id = $1::uuid', [team.keyId]);
      const ctx = await authenticateKey(database.db.pool, hash, 100);
      assert.ok(ctx);
      const now = await bucket('key_id = $1::uuid', [team.keyId]);
      assert.equal(ctx.taken, now.last_take);
      granted += now.last_take;
      const diff = now.tokens + now.last_take - expectedAfter(was, now, perMinute);
      if (Math.abs(diff) > 1e-9) faults.push(`take ${i}: ${diff.toExponential(3)} tokens (${JSON.stringify({ was: { ...was, at: String(was.at) }, now: { ...now, at: String(now.at) } })})`);
    }
    assert.deepEqual(faults.slice(0, 5), [], `${faults.length} of 400 takes did not conserve tokens`);
    // The bucket was drained: the takes granted the full bucket and went on at the refill's pace.
    assert.ok(granted >= perMinute, `granted ${granted}`);
  });

  test("a member's lanes: the same, two lanes in one statement", async () => {
    const team = await makeTeam(database.db);
    const lanes = [
      { lane: 'console' as const, perMinute: 600 },
      { lane: 'upload' as const, perMinute: 30 },
    ];
    const faults: string[] = [];
    const read = async (): Promise<Bucket[]> => {
      const out: Bucket[] = [];
      for (const l of lanes) out.push(await bucket('member_id = $1::uuid AND lane = $2::text', [team.memberId, l.lane]));
      return out;
    };
    await takeMemberTokens(database.db.pool, team.memberId, lanes); // creates the rows
    for (let i = 0; i < 300; i++) {
      const was = await read();
      const results = await takeMemberTokens(database.db.pool, team.memberId, lanes);
      const now = await read();
      lanes.forEach((l, j) => {
        assert.equal(results[j]!.took, now[j]!.last_take === 1);
        const diff = now[j]!.tokens + now[j]!.last_take - expectedAfter(was[j]!, now[j]!, l.perMinute);
        if (Math.abs(diff) > 1e-9) faults.push(`take ${i} ${l.lane}: ${diff.toExponential(3)}`);
      });
    }
    assert.deepEqual(faults.slice(0, 5), [], `${faults.length} takes did not conserve tokens`);
  });
});
