-- Up Migration
-- webhook_deliveries_due (next_attempt_at) WHERE pending no longer serves any statement as meant:
-- the claim finds each endpoint's oldest due deliveries through webhook_deliveries_endpoint_due
-- (0010), yet with this index present the planner scanned it instead (every due delivery of every
-- endpoint, filtered down to one endpoint: a cost that grows with the other endpoints' backlog),
-- and dropping an endpoint's pending deliveries did the same. Every claim (a new row version of
-- a pending delivery) also paid for an entry in it. The metrics scrape, its only other reader,
-- counts all pending rows either way.
DROP INDEX webhook_deliveries_due;

-- Down Migration
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
