package io.idem.store.jdbc;

/**
 * Every test of {@link OutboxRelayIT} on the real MariaDB (a database of its own per test): the
 * outbox's MariaDB scripts, enqueue's duplicate (error 1062 on the unique key, the handler's
 * transaction going on), the claim at READ COMMITTED under the named lock, two relays racing, the
 * per-key order, parked rows, the counts and the purge of sent rows.
 */
class MariaDbOutboxRelayIT extends OutboxRelayIT {
  @Override
  OutboxTestDatabase database() {
    return OutboxTestDatabase.MARIADB;
  }
}
