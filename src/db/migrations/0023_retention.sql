-- Up Migration
-- Retention (issue 37): the janitor deletes rows past their period a batch at a time, oldest
-- first. These indexes let each batch find its oldest rows without reading the table; they hold
-- only the rows a batch looks for where that is a small part of the table (partial indexes).
-- run_events already has run_events_created (created_at); a delivery's event is found through
-- the UNIQUE (event_id, endpoint_id) index; rate buckets are a row per key or member lane.
CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (finished_at) WHERE status <> 'pending';
CREATE INDEX webhook_attempts_attempted ON webhook_attempts (attempted_at);
CREATE INDEX run_outputs_expired ON run_outputs (expires_at) WHERE status = 'expired';
CREATE INDEX files_expired ON files ((coalesce(expires_at, upload_expires_at))) WHERE status = 'expired';
-- These tables now lose a day's rows every day, a small part of what they hold (a thirtieth of the
-- events, deliveries and attempts). At PostgreSQL's default scale factor (0.2) autovacuum would
-- wait for a fifth of a table to be dead (about 6 days of deletes here) before it made the space
-- reusable, and the table would grow by that much meanwhile; at 0.02 it vacuums every half day or
-- so and new rows take the space old ones left (bench:retention measures both).
ALTER TABLE run_events SET (autovacuum_vacuum_scale_factor = 0.02);
ALTER TABLE webhook_deliveries SET (autovacuum_vacuum_scale_factor = 0.02);
ALTER TABLE webhook_attempts SET (autovacuum_vacuum_scale_factor = 0.02);
ALTER TABLE run_outputs SET (autovacuum_vacuum_scale_factor = 0.02);
ALTER TABLE files SET (autovacuum_vacuum_scale_factor = 0.02);

-- Down Migration
ALTER TABLE files RESET (autovacuum_vacuum_scale_factor);
ALTER TABLE run_outputs RESET (autovacuum_vacuum_scale_factor);
ALTER TABLE webhook_attempts RESET (autovacuum_vacuum_scale_factor);
ALTER TABLE webhook_deliveries RESET (autovacuum_vacuum_scale_factor);
ALTER TABLE run_events RESET (autovacuum_vacuum_scale_factor);
DROP INDEX files_expired;
DROP INDEX run_outputs_expired;
DROP INDEX webhook_attempts_attempted;
DROP INDEX webhook_deliveries_finished;
