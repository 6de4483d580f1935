-- Idem processed-events: dead-letter decisions, MariaDB 10.6+ (after V1__processed_events.sql).
-- (No semicolon in these comments: createTableIfMissing splits the script on it.)
-- The same columns as the PostgreSQL script (docs/STORE.md). Existing rows get outcome PROCESSED
-- (ADD COLUMN is instant on InnoDB, MariaDB 10.3+).
ALTER TABLE idem_processed_events
    ADD COLUMN IF NOT EXISTS outcome               varchar(16) NOT NULL DEFAULT 'PROCESSED',
    ADD COLUMN IF NOT EXISTS dead_letter_cause     varchar(32),
    ADD COLUMN IF NOT EXISTS dead_letter_detail    text,
    ADD COLUMN IF NOT EXISTS dead_letter_exception text,
    ADD COLUMN IF NOT EXISTS broker_message_id     text
