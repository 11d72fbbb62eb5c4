-- Up Migration
-- Sign-in throttling (issue 25). A device cookie marks a browser that signed in to an account
-- before: failures from elsewhere never refuse it (OWASP's device cookies). Only the SHA-256 of
-- its token is kept, with the account (the ASCII-lowered email) it was issued for.
CREATE TABLE console_devices (
  token_hash bytea PRIMARY KEY,
  account text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);
CREATE INDEX console_devices_expires ON console_devices (expires_at);

-- Sign-in matches emails ASCII-only (console emails are ASCII): lower() follows the database's
-- locale, and on a glibc UTF-8 one folds 'İ' to 'i', so spellings the throttle counted apart
-- matched one member.
DROP INDEX members_active_email_any_team;
CREATE INDEX members_active_email_ascii ON members (translate(email, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz'))
  WHERE removed_at IS NULL;

-- The buckets are keyed anew (per client group, per account and client group, per account).
DELETE FROM console_signin_attempts;
-- An account's bucket also holds its queue of delayed tries: the end of the last turn taken. One
-- row per account, updated under its lock, so tries from every process wait one after another.
ALTER TABLE console_signin_attempts ADD COLUMN next_at timestamptz;

-- Down Migration
DELETE FROM console_signin_attempts;
ALTER TABLE console_signin_attempts DROP COLUMN next_at;
DROP INDEX members_active_email_ascii;
CREATE INDEX members_active_email_any_team ON members (lower(email)) WHERE removed_at IS NULL;
DROP INDEX console_devices_expires;
DROP TABLE console_devices;
