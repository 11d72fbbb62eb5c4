-- Up Migration
-- The claim walks the endpoints that have pending deliveries and, per endpoint, reads only its
-- oldest due ones and counts only its leased ones, so its cost follows the number of endpoints and
-- the batch, not the size of the backlog. The new index also serves what the old
-- (endpoint_id) WHERE pending one did (dropping an endpoint's pending deliveries).
CREATE INDEX webhook_deliveries_endpoint_due ON webhook_deliveries (endpoint_id, next_attempt_at, id) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_endpoint_leased ON webhook_deliveries (endpoint_id) WHERE status = 'pending' AND lease_owner IS NOT NULL;
DROP INDEX webhook_deliveries_endpoint;

-- Down Migration
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id) WHERE status = 'pending';
DROP INDEX webhook_deliveries_endpoint_leased;
DROP INDEX webhook_deliveries_endpoint_due;
