-- Idem processed-events (inbox) table, MariaDB 10.6+ (InnoDB).
-- (No semicolon in these comments: createTableIfMissing splits the script on it.)
-- Run it with your own migration tool (a Flyway location of its own, classpath:db/migration/idem-mariadb),
-- or let MyBatisProcessedEventStore.Builder#createTableIfMissing(true) apply it.
-- One row per (consumer group, idempotency key) whose business effect has committed.
-- The key columns are utf8mb4 with utf8mb4_nopad_bin: a key equals only itself (the default
-- utf8mb4 collations ignore case, accents and trailing spaces). The key takes at most
-- 128 x 4 + 512 x 4 = 2560 bytes, within InnoDB's 3072-byte index key limit (DYNAMIC rows,
-- innodb_page_size 16k, MariaDB's defaults). A smaller page size lowers the limit, and MariaDB then
-- refuses this script (error 1071, naming the limit) rather than shorten the key.
-- processed_at is UTC (DATETIME(6), no 2038 limit, no session time zone).
CREATE TABLE IF NOT EXISTS idem_processed_events (
    consumer_group  varchar(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    idempotency_key varchar(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    key_source      varchar(16)  NOT NULL,
    payload_sha256  varbinary(32) NOT NULL CHECK (octet_length(payload_sha256) = 32),
    processed_at    datetime(6)  NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    PRIMARY KEY (consumer_group, idempotency_key),
    -- Retention purges by age in bounded batches.
    KEY idem_processed_events_processed_at_idx (processed_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin ROW_FORMAT = DYNAMIC
