-- Idem dead-letter actions, MariaDB 10.6+ (InnoDB), the dead-letter tool: docs/DEAD-LETTERS.md.
-- (No semicolon in these comments: createTableIfMissing splits the script on it.)
-- Run it with your own migration tool (a Flyway location of its own, classpath:db/migration/idem-mariadb),
-- or let DeadLetterActions.Builder#createTableIfMissing(true) apply it.
-- The same rows as the PostgreSQL script. Destination and dead-letter id are compared exactly
-- (utf8mb4_nopad_bin). Their index takes 512 x 4 + 512 x 4 = 4096 bytes, more than InnoDB's
-- 3072-byte index key limit, so it indexes the destination and the first 256 characters of the
-- id (2048 + 1024 bytes): a lookup reads the few rows sharing that prefix and compares the whole
-- value (nothing is shortened in the row). acted_at is UTC (DATETIME(6)).
CREATE TABLE IF NOT EXISTS idem_dead_letter_actions (
    id              bigint        NOT NULL AUTO_INCREMENT PRIMARY KEY,
    action          varchar(16)   NOT NULL,
    broker          varchar(16)   NOT NULL,
    destination     varchar(512)  CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    dead_letter_id  varchar(512)  CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    consumer_group  varchar(128)  CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin,
    idempotency_key varchar(512)  CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin,
    cause           varchar(32),
    target          varchar(512),
    operator        varchar(256)  NOT NULL,
    reason          text,
    acted_at        datetime(6)   NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    KEY idem_dead_letter_actions_dead_letter_idx (destination, dead_letter_id(256))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin ROW_FORMAT = DYNAMIC
