import { randomUUID } from 'node:crypto';
import type { Queryable } from '../../db/pool.js';
import { mustGetTeam } from '../../teams/repository.js';
import type { BrandKit } from './schema.js';

export interface SavedBrandKit {
  object: 'brand_kit';
  id: string;
  team_id: string;
  run_id: string;
  name: string;
  created_at: string;
  kit: BrandKit;
}

/** The name a saved kit is listed under: the site's name, else the page's host, else a plain label. */
export function kitLabel(kit: BrandKit): string {
  if (kit.name) return kit.name.slice(0, 200);
  const url = kit.source.final_url ?? kit.source.url;
  if (url) {
    try {
      return new URL(url).hostname;
    } catch {
      // not a URL: fall through
    }
  }
  return `Brand kit from ${kit.source.files.length} image${kit.source.files.length === 1 ? '' : 's'}`;
}

/** Saves a kit on the team; once per run (a second save of the same run changes nothing). */
export async function insertBrandKit(db: Queryable, teamId: string, runId: string, kit: BrandKit): Promise<void> {
  await db.query(
    `INSERT INTO brand_kits (id, team_id, run_id, name, kit) VALUES ($1::uuid, $2::uuid, $3::uuid, $4::text, $5::jsonb)
     ON CONFLICT (run_id) DO NOTHING`,
    [randomUUID(), teamId, runId, kitLabel(kit), JSON.stringify(kit)],
  );
}

interface BrandKitRow {
  id: string;
  team_id: string;
  run_id: string;
  name: string;
  created_at: Date;
  kit: BrandKit;
}

/** A team's saved kits, newest first. */
export async function listBrandKits(db: Queryable, teamId: string, limit = 100): Promise<SavedBrandKit[]> {
  await mustGetTeam(db, teamId);
  const { rows } = await db.query<BrandKitRow>(
    `SELECT id, team_id, run_id, name, created_at, kit FROM brand_kits WHERE team_id = $1::uuid
      ORDER BY created_at DESC, id LIMIT $2::integer`,
    [teamId, limit],
  );
  return rows.map((r) => ({ object: 'brand_kit', id: r.id, team_id: r.team_id, run_id: r.run_id, name: r.name, created_at: r.created_at.toISOString(), kit: r.kit }));
}
