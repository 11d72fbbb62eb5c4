import type { Queryable } from '../db/pool.js';
import { BUCKET_TAKE_UPDATE } from './repository.js';

/** A member's console bucket: every console request takes from 'console', some also from a tighter lane. */
export type MemberLane = 'console' | 'outbound' | 'upload';

export interface LaneTake {
  lane: MemberLane;
  /** The lane's rate, per minute; its bucket holds at most one minute's worth. */
  perMinute: number;
}

export interface LaneResult extends LaneTake {
  /** Tokens left in the lane's bucket after this take. */
  tokens: number;
  /** Whether this request got its token from the lane. */
  took: boolean;
}

/**
 * Takes one token from each of the member's lanes, in one statement, from the rate_buckets rows
 * every process shares (the table API keys' buckets are in). A lane with less than a token takes
 * nothing. The row locks serialise concurrent takes of one member, always in the order the lanes
 * are given, so two requests never count on the same token and never deadlock.
 */
export async function takeMemberTokens(db: Queryable, memberId: string, lanes: LaneTake[]): Promise<LaneResult[]> {
  const { rows } = await db.query<{ lane: MemberLane; tokens: number; last_take: number }>({
    name: 'take_member_tokens',
    text: `INSERT INTO rate_buckets AS rb (member_id, lane, capacity, tokens, refilled_at, last_take)
           -- last_take 1: the most a take from a lane grants (BUCKET_TAKE_UPDATE reads it as EXCLUDED.last_take).
           SELECT $1::uuid, l.lane, l.capacity, l.capacity - 1, clock_timestamp(), 1
             FROM unnest($2::text[], $3::float8[]) WITH ORDINALITY AS l(lane, capacity, n)
            ORDER BY l.n
           ON CONFLICT (member_id, lane) WHERE member_id IS NOT NULL DO UPDATE
              SET ${BUCKET_TAKE_UPDATE}
           RETURNING rb.lane, rb.tokens, rb.last_take`,
    values: [memberId, lanes.map((l) => l.lane), lanes.map((l) => l.perMinute)],
  });
  return lanes.map((l) => {
    const row = rows.find((r) => r.lane === l.lane);
    return { ...l, tokens: row?.tokens ?? 0, took: (row?.last_take ?? 0) >= 1 };
  });
}
