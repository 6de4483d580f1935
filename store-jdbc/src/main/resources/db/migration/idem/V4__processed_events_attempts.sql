-- Idem processed-events: attempt counts that survive the process, PostgreSQL 12+ (after
-- V1__processed_events.sql). (No semicolon in these comments: createTableIfMissing splits the
-- script on it.)
-- Run it with your own migration tool (Flyway picks it up from classpath:db/migration/idem),
-- or let MyBatisProcessedEventStore.Builder#createTableIfMissing(true) apply it.
-- One row per (consumer group, idempotency key) whose handler was started for a delivery the
-- broker's own counter may not account for (a redelivery after a restart, RabbitMQ's redelivered
-- flag): written and committed in a short transaction of its own BEFORE the handler runs, so a
-- handler that kills the process is still counted (docs/FAILURES.md). A first delivery writes
-- nothing. The row is deleted in the transaction that applies the message, when the message is
-- dead-lettered or its dead letter released, and by retention (last_started_at). Rows live only
-- while a message is being redelivered, so the table stays small: no index beyond the key.
-- The name is the processed-events table's with the suffix _attempts.
CREATE TABLE IF NOT EXISTS idem_processed_events_attempts (
    consumer_group   varchar(128) NOT NULL,
    idempotency_key  varchar(512) NOT NULL,
    attempts         integer      NOT NULL CHECK (attempts >= 1),
    first_started_at timestamptz  NOT NULL DEFAULT now(),
    last_started_at  timestamptz  NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer_group, idempotency_key)
);
