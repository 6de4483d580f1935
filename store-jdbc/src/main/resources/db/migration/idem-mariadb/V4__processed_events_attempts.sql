-- Idem processed-events: attempt counts that survive the process, MariaDB 10.6+ (after
-- V1__processed_events.sql). (No semicolon in these comments: createTableIfMissing splits the
-- script on it.)
-- The same rows as the PostgreSQL script (docs/STORE.md, "Attempt counts"), times in UTC.
-- The name is the processed-events table's with the suffix _attempts.
CREATE TABLE IF NOT EXISTS idem_processed_events_attempts (
    consumer_group   varchar(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    idempotency_key  varchar(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    attempts         int          NOT NULL CHECK (attempts >= 1),
    first_started_at datetime(6)  NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    last_started_at  datetime(6)  NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    PRIMARY KEY (consumer_group, idempotency_key)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin ROW_FORMAT = DYNAMIC
