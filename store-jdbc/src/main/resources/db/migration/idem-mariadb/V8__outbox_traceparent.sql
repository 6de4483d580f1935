-- Idem transactional outbox, MariaDB 10.6+: the trace context of each row.
-- (No semicolon in these comments: createTableIfMissing splits the script on it.)
-- Apply after V2__outbox.sql and V5__outbox_lease.sql (OutboxRelay.Builder#createTableIfMissing(true)
-- applies all three). Idempotent, and instant on InnoDB (a nullable column added last).
-- traceparent: the W3C trace context of the handler run that enqueued the row, or NULL.
ALTER TABLE idem_outbox ADD COLUMN IF NOT EXISTS traceparent varchar(512)
