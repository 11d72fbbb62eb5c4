-- Up Migration
-- Secret rotation (issue 18): the secret replaced by the last rotation keeps signing, beside the
-- new one, until previous_secret_expires_at. In clear like signing_secret, for the same reason:
-- every attempt is signed with it. One previous secret at most: a second rotation replaces it.
ALTER TABLE webhook_endpoints
  ADD COLUMN previous_signing_secret text,
  ADD COLUMN previous_secret_expires_at timestamptz,
  ADD CONSTRAINT webhook_endpoints_previous_secret CHECK ((previous_signing_secret IS NULL) = (previous_secret_expires_at IS NULL));

-- Auto-pause (issue 18, same release): failing_since is the first failed delivery attempt since
-- the last successful one (NULL while the last attempt succeeded); the service pauses an endpoint
-- whose streak outlives the configured window, or at once on 410 Gone, and says why in
-- paused_reason. paused_at is when any pause (a member's too) happened. Resuming clears all three.
ALTER TABLE webhook_endpoints
  ADD COLUMN failing_since timestamptz,
  ADD COLUMN paused_reason text CHECK (paused_reason IN ('failing', 'gone')),
  ADD COLUMN paused_at timestamptz;

-- Down Migration
ALTER TABLE webhook_endpoints
  DROP COLUMN paused_at,
  DROP COLUMN paused_reason,
  DROP COLUMN failing_since,
  DROP CONSTRAINT webhook_endpoints_previous_secret,
  DROP COLUMN previous_secret_expires_at,
  DROP COLUMN previous_signing_secret;
