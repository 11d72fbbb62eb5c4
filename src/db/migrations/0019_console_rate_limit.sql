-- Up Migration
-- Console sessions take from the same shared token buckets as API keys: one row per key, or one
-- per (member, lane) for a member's console requests (the lanes are in src/console/rate-limit.ts).
-- The key's bucket keeps a unique index on key_id, which its take's ON CONFLICT (key_id) uses.
ALTER TABLE rate_buckets DROP CONSTRAINT rate_buckets_pkey;
ALTER TABLE rate_buckets ALTER COLUMN key_id DROP NOT NULL;
CREATE UNIQUE INDEX rate_buckets_key ON rate_buckets (key_id);
ALTER TABLE rate_buckets
  ADD COLUMN member_id uuid REFERENCES members(id) ON DELETE CASCADE,
  ADD COLUMN lane text CHECK (lane IN ('console', 'outbound', 'upload')),
  -- A bucket is a key's, or a member's lane's: never both, never neither.
  ADD CONSTRAINT rate_buckets_owner CHECK ((key_id IS NULL) = (member_id IS NOT NULL) AND (member_id IS NULL) = (lane IS NULL));
CREATE UNIQUE INDEX rate_buckets_member ON rate_buckets (member_id, lane) WHERE member_id IS NOT NULL;

-- Down Migration
DELETE FROM rate_buckets WHERE key_id IS NULL;
DROP INDEX rate_buckets_member;
ALTER TABLE rate_buckets DROP CONSTRAINT rate_buckets_owner, DROP COLUMN lane, DROP COLUMN member_id;
DROP INDEX rate_buckets_key;
ALTER TABLE rate_buckets ALTER COLUMN key_id SET NOT NULL;
ALTER TABLE rate_buckets ADD PRIMARY KEY (key_id);
