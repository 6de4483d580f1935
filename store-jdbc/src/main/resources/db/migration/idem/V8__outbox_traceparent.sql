-- Idem transactional outbox, PostgreSQL 12+: the trace context of each row.
-- Apply after V2__outbox.sql and V5__outbox_lease.sql (Flyway picks it up from
-- classpath:db/migration/idem, OutboxRelay.Builder#createTableIfMissing(true) applies all three).
-- Idempotent, and instant on a large table (a nullable column without a default).
--
-- traceparent: the W3C trace context of the handler run that enqueued the row (TraceContext), or
-- NULL. Every publisher sends it as the traceparent header, attribute or property, so a trace
-- runs from the consumed message through the outbox to the published one (docs/OUTBOX.md).
ALTER TABLE idem_outbox ADD COLUMN IF NOT EXISTS traceparent varchar(512);
