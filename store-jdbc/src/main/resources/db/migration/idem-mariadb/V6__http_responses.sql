-- Idem HTTP: the stored first response of each Idempotency-Key request, MariaDB 10.6+ (InnoDB,
-- after V1__processed_events.sql). Used by idem-http's JdbcStoredResponses (docs/HTTP.md).
-- (No semicolon in these comments: createTableIfMissing splits the script on it.)
-- Run it with your own migration tool (Flyway picks it up from classpath:db/migration/idem-mariadb),
-- or let JdbcStoredResponses.Builder#createTableIfMissing(true) apply it.
-- One row per claimed key of an Idempotency-Key endpoint, written in the same transaction as the
-- key's processed-events marker and the business write, so a retry finds the response exactly
-- when it finds the marker. Deleting the marker (the RetentionJob, a released dead-letter
-- decision) deletes the response with it (ON DELETE CASCADE): stored responses live exactly as
-- long as their markers, and need no purge of their own.
-- The key columns are the marker's (utf8mb4, utf8mb4_nopad_bin: a key equals only itself), as the
-- foreign key needs. headers: a JSON array of [name, value] pairs, in the order the handler set
-- them. stored_at is UTC (DATETIME(6), no session time zone).
CREATE TABLE IF NOT EXISTS idem_http_responses (
    consumer_group  varchar(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    idempotency_key varchar(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    status          smallint     NOT NULL CHECK (status BETWEEN 100 AND 599),
    headers         longtext     NOT NULL,
    body            longblob     NOT NULL,
    stored_at       datetime(6)  NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    PRIMARY KEY (consumer_group, idempotency_key),
    CONSTRAINT idem_http_responses_marker_fk FOREIGN KEY (consumer_group, idempotency_key)
        REFERENCES idem_processed_events (consumer_group, idempotency_key) ON DELETE CASCADE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin ROW_FORMAT = DYNAMIC
