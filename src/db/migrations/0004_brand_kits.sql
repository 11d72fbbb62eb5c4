-- Up Migration
-- Brand kits a team saved (brand_kit_extract with save: true), written in the transaction that
-- marks the run succeeded. kit is the run's brand-kit.json (schema in src/tools/brand-kit/schema.ts).
CREATE TABLE brand_kits (
  id uuid PRIMARY KEY,
  team_id uuid NOT NULL REFERENCES teams(id),
  run_id uuid NOT NULL UNIQUE REFERENCES runs(id),
  name text NOT NULL,
  kit jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX brand_kits_team_created ON brand_kits (team_id, created_at);

-- Down Migration
DROP TABLE brand_kits;
