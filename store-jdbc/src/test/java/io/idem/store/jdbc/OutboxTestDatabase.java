package io.idem.store.jdbc;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.fixtures.MariaDbFixture;

/**
 * The database an outbox IT runs on, and the SQL of the test itself that differs there ({@link
 * OutboxRelayIT}, {@link OutboxRelayBatchIT} on PostgreSQL; their MariaDB subclasses).
 */
enum OutboxTestDatabase {
  POSTGRESQL {
    @Override
    HikariDataSource newPool(String prefix, String applicationName) {
      return StoreTests.pool(StoreTests.newSchema(prefix), applicationName, null, c -> c.setMaximumPoolSize(6));
    }

    @Override
    String now() {
      return "now()";
    }

    @Override
    String dueInMillis() {
      return "extract(epoch FROM next_attempt_at - now()) * 1000";
    }

    @Override
    String openTransactions(String applicationName) {
      return "SELECT count(*) FROM pg_stat_activity WHERE application_name = '" + applicationName
          + "' AND xact_start IS NOT NULL AND pid <> pg_backend_pid()";
    }

    @Override
    String lockWaits(String applicationName) {
      return "SELECT count(*) FROM pg_stat_activity WHERE application_name = '" + applicationName
          + "' AND wait_event_type = 'Lock'";
    }
  },

  MARIADB {
    @Override
    HikariDataSource newPool(String prefix, String applicationName) {
      return MariaDbFixture.shared().newDatabase(prefix);
    }

    /** The table's times are UTC. */
    @Override
    String now() {
      return "UTC_TIMESTAMP(6)";
    }

    @Override
    String dueInMillis() {
      return "TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), next_attempt_at) / 1000";
    }

    /** InnoDB's open transactions of the other sessions on this test's database. */
    @Override
    String openTransactions(String applicationName) {
      return "SELECT count(*) FROM information_schema.innodb_trx t JOIN information_schema.processlist p"
          + " ON p.id = t.trx_mysql_thread_id WHERE p.db = DATABASE() AND p.id <> CONNECTION_ID()";
    }

    /** InnoDB's transactions on this test's database waiting for a row lock. */
    @Override
    String lockWaits(String applicationName) {
      return "SELECT count(*) FROM information_schema.innodb_trx t JOIN information_schema.processlist p"
          + " ON p.id = t.trx_mysql_thread_id WHERE p.db = DATABASE() AND t.trx_state = 'LOCK WAIT'";
    }
  };

  /** A pool on a new, empty schema (MariaDB: database). */
  abstract HikariDataSource newPool(String prefix, String applicationName);

  /** The database's clock, in its SQL. */
  abstract String now();

  /** Milliseconds from now until a row's next_attempt_at, in its SQL. */
  abstract String dueInMillis();

  /** How many transactions of the pool's other sessions are open now. */
  abstract String openTransactions(String applicationName);

  /** How many sessions of the pool wait for a lock now. */
  abstract String lockWaits(String applicationName);
}
