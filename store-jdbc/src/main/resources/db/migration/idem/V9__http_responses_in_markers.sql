-- Idem HTTP: the stored first response of an Idempotency-Key request in its key's own
-- processed-events marker, PostgreSQL 12+ (after V1__processed_events.sql and V6__http_responses.sql).
-- Used by idem-http's JdbcStoredResponses (docs/HTTP.md, "The stored response and retention").
-- (No semicolon in these comments: createTableIfMissing splits the script on it.)
-- Run it with your own migration tool (Flyway picks it up from classpath:db/migration/idem),
-- or let JdbcStoredResponses.Builder#createTableIfMissing(true) apply it.
-- The claim inserts the marker, and the endpoint's UPDATE of these columns travels with the COMMIT
-- of the same transaction: one row per request instead of a second row in idem_http_responses
-- (its heap tuple, its primary-key entry under a random key and its foreign-key check). No indexed
-- column changes, so the UPDATE is a HOT update whenever the marker's page has room. The response
-- lives exactly as long as its marker (it is the same row: retention, a released dead-letter
-- decision). Rows of markers written before this migration, and of broker consumers and webhook
-- receivers, keep NULL. Responses stored in idem_http_responses before it are still read (and
-- still deleted with their markers by its foreign key).
-- Nullable columns without a default and without a constraint: no table rewrite, no table scan.
-- headers: a JSON array of [name, value] pairs, in the order the handler set them.
ALTER TABLE idem_processed_events
    ADD COLUMN IF NOT EXISTS response_status  smallint,
    ADD COLUMN IF NOT EXISTS response_headers text,
    ADD COLUMN IF NOT EXISTS response_body    bytea
