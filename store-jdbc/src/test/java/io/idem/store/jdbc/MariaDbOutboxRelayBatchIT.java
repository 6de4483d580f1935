package io.idem.store.jdbc;

/**
 * Every test of {@link OutboxRelayBatchIT} on the real MariaDB: one publishAll per batch with no
 * relay transaction open during it (InnoDB's own list of open transactions), the sent rows marked
 * in one statement, failures charged per row and key, outages to no row.
 */
class MariaDbOutboxRelayBatchIT extends OutboxRelayBatchIT {
  @Override
  OutboxTestDatabase database() {
    return OutboxTestDatabase.MARIADB;
  }
}
