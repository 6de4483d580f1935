-- Idem processed-events (inbox) table, PostgreSQL 12+.
-- Run it with your own migration tool (Flyway picks it up from classpath:db/migration/idem),
-- or let MyBatisProcessedEventStore.Builder#createTableIfMissing(true) apply it.
-- One row per (consumer group, idempotency key) whose business effect has committed.
CREATE TABLE IF NOT EXISTS idem_processed_events (
    consumer_group  varchar(128) NOT NULL,
    idempotency_key varchar(512) NOT NULL,
    key_source      varchar(16)  NOT NULL,
    payload_sha256  bytea        NOT NULL CHECK (octet_length(payload_sha256) = 32),
    processed_at    timestamptz  NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer_group, idempotency_key)
);

-- Retention purges by age in bounded batches.
CREATE INDEX IF NOT EXISTS idem_processed_events_processed_at_idx
    ON idem_processed_events (processed_at);
