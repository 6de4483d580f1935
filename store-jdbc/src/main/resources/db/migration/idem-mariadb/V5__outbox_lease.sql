-- Idem transactional outbox, MariaDB 10.6+: the relay's lease and the claim's index.
-- (No semicolon in these comments: createTableIfMissing splits the script on it.)
-- Apply after V2__outbox.sql (OutboxRelay.Builder#createTableIfMissing(true) applies both).
-- Idempotent. A relay claims rows in a short transaction: it writes its lease token into
-- leased_by and moves next_attempt_at to the lease's end, commits, and publishes outside any
-- transaction (docs/OUTBOX.md).
ALTER TABLE idem_outbox ADD COLUMN IF NOT EXISTS leased_by varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin;

-- The claim's unordered part: due rows without an ordering key, oldest first (sent_at, parked_at
-- and ordering_key IS NULL are the seek, as PostgreSQL's partial index's condition).
CREATE INDEX IF NOT EXISTS idem_outbox_unordered_due_idx
    ON idem_outbox (sent_at, parked_at, ordering_key, next_attempt_at, id)
