import { TeamCache } from '../core/team-cache.js';
import type { Queryable } from '../db/pool.js';

/** Channel on which PostgreSQL names a team whose balance changed (migration 0026). */
export const SPARKS_CHANNEL = 'toolrun_sparks';

interface Balance {
  teamId: string;
  sparks: number;
}

/**
 * Teams' balances as GET /v1/me answers them, from memory while toolrun_sparks is heard: a hold,
 * a settlement or a grant drops the team's entry (migration 0026), and the next request reads it
 * again. Reading teams on every request was one round trip, most of that route's cost (issue 37:
 * 190k instructions a request against 109k from memory).
 */
export class Balances {
  private readonly cache: TeamCache<Balance>;

  constructor(maxAgeMs: number, maxEntries = 50_000) {
    this.cache = new TeamCache<Balance>(maxAgeMs, maxEntries);
  }

  /** The LISTEN connection is up (true) or lost (false): either way, what is cached may be stale. */
  setListening(live: boolean): void {
    this.cache.setListening(live);
  }

  /** The team's balance changed (or the team did): read it again next time. */
  changed(teamId: string): void {
    this.cache.invalidateTeam(teamId);
  }

  clear(): void {
    this.cache.clear();
  }

  /** The team's balance if this process holds it (no promise: GET /v1/me answers most requests so). */
  known(teamId: string): number | undefined {
    return this.cache.get(teamId)?.value.sparks;
  }

  async of(db: Queryable, teamId: string): Promise<number> {
    const known = this.cache.get(teamId);
    if (known) return known.value.sparks;
    const ticket = this.cache.ticket();
    const sparks = await readBalance(db, teamId);
    this.cache.put(teamId, { teamId, sparks }, ticket);
    return sparks;
  }
}

/** The team's balance as PostgreSQL has it now (the console reads it so; GET /v1/me through Balances). */
export async function readBalance(db: Queryable, teamId: string): Promise<number> {
  const { rows } = await db.query<{ sparks: number }>({ name: 'team_balance', text: 'SELECT sparks_available AS sparks FROM teams WHERE id = $1::uuid', values: [teamId] });
  return rows[0]?.sparks ?? 0;
}
