-- Idem transactional outbox, PostgreSQL 12+: a lease the claim writes without touching an index.
-- Apply after V2, V5 and V8 (Flyway picks it up from classpath:db/migration/idem,
-- OutboxRelay.Builder#createTableIfMissing(true) applies all four). Idempotent, and instant on a
-- large table (a nullable column without a default, and fillfactor, a catalog setting).
--
-- leased_until: the end of the lease of the relay publishing the row (leased_by), NULL otherwise.
-- A row is due when it is not parked, next_attempt_at has passed and leased_until is NULL or has
-- passed. Before V10 the lease moved next_attempt_at, an indexed column: every claim wrote a new
-- entry for each claimed row in every index. leased_until and leased_by are in no index and no
-- index predicate, so the claim's UPDATE is a HOT update (heap-only: no index entry written) when
-- the row's page has room for the new version.
ALTER TABLE idem_outbox ADD COLUMN IF NOT EXISTS leased_until timestamptz;

-- The room: new rows fill their pages to half, so that the lease of every row of a page fits
-- beside it (a claim leases consecutive rows, most of a page at once). Applies to pages written
-- from now on. The cost: the heap takes up to twice the space of a packed one, sent rows kept for
-- retention included. ALTER TABLE … SET (fillfactor = 100) trades the HOT lease back
-- for it (docs/OUTBOX.md, "The table").
ALTER TABLE idem_outbox SET (fillfactor = 50);
