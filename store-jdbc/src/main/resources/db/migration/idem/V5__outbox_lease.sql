-- Idem transactional outbox, PostgreSQL 12+: the relay's lease and the claim's indexes.
-- Apply after V2__outbox.sql (Flyway picks it up from classpath:db/migration/idem,
-- OutboxRelay.Builder#createTableIfMissing(true) applies both). Idempotent.
--
-- A relay claims rows in a short transaction: it writes its lease token into leased_by and moves
-- next_attempt_at to the lease's end, commits, and publishes outside any transaction. A row in
-- flight is therefore simply "not due" (it holds the rows behind it with its ordering key), and a
-- relay that dies leaves rows that become due again when their lease ends.
ALTER TABLE idem_outbox ADD COLUMN IF NOT EXISTS leased_by varchar(255);

-- The claim's unordered part: due rows without an ordering key, oldest first. Rows with an
-- ordering key are not in it, so a blocked key's backlog is never visited by this scan.
CREATE INDEX IF NOT EXISTS idem_outbox_unordered_due_idx
    ON idem_outbox (next_attempt_at, id)
    WHERE sent_at IS NULL AND parked_at IS NULL AND ordering_key IS NULL;

-- The claim's ordered part walks the distinct ordering keys of unsent rows through
-- idem_outbox_ordering_idx (ordering_key, id) WHERE sent_at IS NULL (V2): one probe per key finds
-- its head, the rows behind a blocked head are not read.
