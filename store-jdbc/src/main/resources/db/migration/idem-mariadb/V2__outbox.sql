-- Idem transactional outbox, MariaDB 10.6+ (InnoDB).
-- (No semicolon in these comments: createTableIfMissing splits the script on it.)
-- Run it with your own migration tool (a Flyway location of its own, classpath:db/migration/idem-mariadb),
-- or let OutboxRelay.Builder#createTableIfMissing(true) apply it.
-- The same rows as the PostgreSQL script (docs/OUTBOX.md). The key, destination and ordering key
-- are utf8mb4 with utf8mb4_nopad_bin (a key equals only itself). The unique key takes at most
-- 255 x 4 + 512 x 4 = 3068 bytes, within InnoDB's 3072-byte index key limit (DYNAMIC rows,
-- innodb_page_size 16k). Times are UTC (DATETIME(6), no 2038 limit, no session time zone).
-- MariaDB has no partial indexes: the indexes below lead with sent_at (and parked_at), whose
-- IS NULL is an equality InnoDB can seek, so they hold the unsent rows first and the claim reads
-- only those, as PostgreSQL's partial indexes do.
CREATE TABLE IF NOT EXISTS idem_outbox (
    id              bigint        NOT NULL AUTO_INCREMENT PRIMARY KEY,
    idempotency_key varchar(512)  CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    destination     varchar(255)  CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    ordering_key    varchar(255)  CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin,
    payload         longblob      NOT NULL,
    headers         longtext      CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '{}' CHECK (json_valid(headers)),
    enqueued_at     datetime(6)   NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    attempts        int           NOT NULL DEFAULT 0,
    next_attempt_at datetime(6)   NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    sent_at         datetime(6),
    parked_at       datetime(6),
    last_error      text,
    UNIQUE KEY idem_outbox_destination_key_uq (destination, idempotency_key),
    -- The claim: due rows in id order.
    KEY idem_outbox_due_idx (sent_at, parked_at, next_attempt_at, id),
    -- The order check: an earlier unsent row with the same ordering key holds the ones behind it.
    KEY idem_outbox_ordering_idx (sent_at, ordering_key, id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin ROW_FORMAT = DYNAMIC
