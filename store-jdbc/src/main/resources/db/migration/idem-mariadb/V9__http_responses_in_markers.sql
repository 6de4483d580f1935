-- Idem HTTP: the stored first response of an Idempotency-Key request in its key's own
-- processed-events marker, MariaDB 10.6+ (InnoDB, after V1__processed_events.sql and
-- V6__http_responses.sql). Used by idem-http's JdbcStoredResponses (docs/HTTP.md, "The stored
-- response and retention").
-- (No semicolon in these comments: createTableIfMissing splits the script on it.)
-- Run it with your own migration tool (Flyway picks it up from classpath:db/migration/idem-mariadb),
-- or let JdbcStoredResponses.Builder#createTableIfMissing(true) apply it.
-- The claim inserts the marker, and the endpoint's UPDATE of these columns follows in the same
-- transaction: one row per request instead of a second row in idem_http_responses (its primary-key
-- entry and its foreign-key check). The response lives exactly as long as its marker (it is the
-- same row). Rows of markers written before this migration, and of broker consumers and webhook
-- receivers, keep NULL. Responses stored in idem_http_responses before it are still read (and
-- still deleted with their markers by its foreign key).
-- Nullable columns added last: instant on InnoDB, idempotent.
-- headers: a JSON array of [name, value] pairs, in the order the handler set them.
ALTER TABLE idem_processed_events
    ADD COLUMN IF NOT EXISTS response_status  smallint NULL,
    ADD COLUMN IF NOT EXISTS response_headers longtext NULL,
    ADD COLUMN IF NOT EXISTS response_body    longblob NULL
