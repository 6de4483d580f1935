package io.idem.store.jdbc;

import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.fixtures.MariaDbFixture;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import javax.sql.DataSource;
import org.apache.ibatis.session.SqlSessionFactory;

/**
 * What the MariaDB race tests share: a database of their own on the shared server, a store on it
 * whose claims wait without bound ({@code claimLockTimeout(Duration.ZERO)}), a second pool to
 * watch InnoDB's lock waits from, and threads for the racers. One per test class; not thread-safe
 * to build or close, its parts are.
 */
final class MariaDbRaces implements AutoCloseable {
  final HikariDataSource pool;
  final HikariDataSource observer;
  final SqlSessionFactory sessions;
  final MyBatisProcessedEventStore store;
  final ExecutorService threads;

  MariaDbRaces(String databasePrefix) {
    MariaDbFixture mariadb = MariaDbFixture.shared();
    pool = mariadb.newDatabase(databasePrefix);
    String database = pool.getJdbcUrl().replaceAll(".*/([a-z0-9_]+)(\\?.*)?$", "$1");
    observer = mariadb.dataSource(database, 2);
    sessions = MyBatisProcessedEventStoreIT.sessions(pool);
    store = MyBatisProcessedEventStore.builder(sessions).createTableIfMissing(true)
        .claimLockTimeout(Duration.ZERO).build();
    threads = Executors.newCachedThreadPool();
  }

  static byte[] sha256(String payload) throws Exception {
    return MessageDigest.getInstance("SHA-256").digest(payload.getBytes(StandardCharsets.UTF_8));
  }

  /** {@link #awaitLockWaits(DataSource, String, int)} through this class's observer. */
  void awaitLockWaits(String text, int waiters) {
    awaitLockWaits(observer, text, waiters);
  }

  /**
   * Waits until {@code waiters} transactions wait for a lock in a statement whose text holds
   * {@code text}, read from information_schema.INNODB_TRX through {@code observer}.
   */
  static void awaitLockWaits(DataSource observer, String text, int waiters) {
    // 250 ms apart: InnoDB refreshes its INNODB_TRX cache only when it was last read more than
    // 100 ms before, so polling faster would keep reading the same stale rows
    await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(250)).until(() -> {
      try (Connection c = observer.getConnection();
          PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM information_schema.INNODB_TRX"
              + " WHERE trx_state = 'LOCK WAIT' AND trx_query LIKE ?")) {
        ps.setString(1, "%" + text + "%");
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          return rs.getInt(1) >= waiters;
        }
      }
    });
  }

  @Override
  public void close() {
    threads.shutdownNow();
    pool.close();
    observer.close();
  }
}
