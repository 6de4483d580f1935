-- Idem processed-events: dead-letter decisions, PostgreSQL 12+ (after V1__processed_events.sql).
-- (No semicolon in these comments: createTableIfMissing splits the script on it.)
-- Run it with your own migration tool (Flyway picks it up from classpath:db/migration/idem),
-- or let MyBatisProcessedEventStore.Builder#createTableIfMissing(true) apply it.
-- A key whose message is dead-lettered (MAX_ATTEMPTS_EXCEEDED, NON_RETRYABLE) gets its marker
-- written with outcome DEAD_LETTERED and the reason before the copy is stored, so that the
-- original coming back after a crash is dead-lettered again, never handled (docs/STORE.md).
-- Existing rows keep outcome PROCESSED, and a constant default adds the column without rewriting
-- the table (PostgreSQL 11+).
ALTER TABLE idem_processed_events
    ADD COLUMN IF NOT EXISTS outcome               varchar(16) NOT NULL DEFAULT 'PROCESSED',
    ADD COLUMN IF NOT EXISTS dead_letter_cause     varchar(32),
    ADD COLUMN IF NOT EXISTS dead_letter_detail    text,
    ADD COLUMN IF NOT EXISTS dead_letter_exception text,
    ADD COLUMN IF NOT EXISTS broker_message_id     text;
