-- Idem HTTP: the stored first response of each Idempotency-Key request, PostgreSQL 12+ (after
-- V1__processed_events.sql). Used by idem-http's JdbcStoredResponses (docs/HTTP.md).
-- (No semicolon in these comments: createTableIfMissing splits the script on it.)
-- Run it with your own migration tool (Flyway picks it up from classpath:db/migration/idem),
-- or let JdbcStoredResponses.Builder#createTableIfMissing(true) apply it.
-- One row per claimed key of an Idempotency-Key endpoint, written in the same transaction as the
-- key's processed-events marker and the business write, so a retry finds the response exactly
-- when it finds the marker. Deleting the marker (the RetentionJob, a released dead-letter
-- decision) deletes the response with it (ON DELETE CASCADE): stored responses live exactly as
-- long as their markers, and need no purge of their own.
-- headers: a JSON array of [name, value] pairs, in the order the handler set them.
CREATE TABLE IF NOT EXISTS idem_http_responses (
    consumer_group  varchar(128) NOT NULL,
    idempotency_key varchar(512) NOT NULL,
    status          smallint     NOT NULL CHECK (status BETWEEN 100 AND 599),
    headers         text         NOT NULL,
    body            bytea        NOT NULL,
    stored_at       timestamptz  NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer_group, idempotency_key),
    CONSTRAINT idem_http_responses_marker_fk FOREIGN KEY (consumer_group, idempotency_key)
        REFERENCES idem_processed_events (consumer_group, idempotency_key) ON DELETE CASCADE
)
