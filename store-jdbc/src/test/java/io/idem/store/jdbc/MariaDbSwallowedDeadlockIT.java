package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.IdempotencyKey;
import io.idem.KeySource;
import io.idem.fixtures.MariaDbFixture;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * "The transaction is still the claim's" on MariaDB: a handler that swallows a deadlock (1213)
 * goes on in a new transaction, because InnoDB rolled back the whole one the claim was in; the
 * marker re-read after the handler finds nothing, the message fails (a handler failure), and
 * neither the marker nor the handler's later write commits. Without that re-read the store would
 * commit the handler's later write alone and the redelivery would apply the message again.
 */
class MariaDbSwallowedDeadlockIT {
  private static HikariDataSource pool;
  private static MyBatisProcessedEventStore store;
  private static ExecutorService threads;

  @BeforeAll
  static void setUp() throws Exception {
    pool = MariaDbFixture.shared().newDatabase("swallowed");
    StoreTests.execute(pool, "CREATE TABLE effects (k varchar(600) NOT NULL)",
        "CREATE TABLE locks (id int PRIMARY KEY, n int NOT NULL)", "INSERT INTO locks VALUES (1, 0), (2, 0)",
        "CREATE TABLE ballast (id int PRIMARY KEY)");
    store = MyBatisProcessedEventStore.builder(MyBatisProcessedEventStoreIT.sessions(pool))
        .createTableIfMissing(true).build();
    threads = Executors.newCachedThreadPool();
  }

  @AfterAll
  static void tearDown() {
    threads.shutdownNow();
    pool.close();
  }

  private static void awaitLockWait(String statementPart) {
    MariaDbRaces.awaitLockWaits(pool, statementPart, 1);
  }

  @Test
  void aSwallowedDeadlockFailsTheMessageAndCommitsNothing() throws Exception {
    IdempotencyKey key = new IdempotencyKey("swallow", "k-" + System.nanoTime(), KeySource.HEADER);
    byte[] fingerprint = MessageDigest.getInstance("SHA-256").digest("p".getBytes(StandardCharsets.UTF_8));
    AtomicReference<SQLException> swallowed = new AtomicReference<>();
    try (Connection other = pool.getConnection(); Statement s = other.createStatement()) {
      other.setAutoCommit(false);
      // the larger transaction: InnoDB rolls back the smaller one of a deadlock, here the handler's
      s.execute("INSERT INTO ballast SELECT seq FROM seq_1_to_200");
      s.execute("UPDATE locks SET n = n + 1 WHERE id = 2");
      Future<Throwable> message = threads.submit(() -> catchThrowable(() -> store.inTransaction(tx -> {
        store.claim(tx, key, fingerprint);
        StoreTests.execute(tx, "UPDATE locks SET n = n + 1 WHERE id = 1");
        try {
          StoreTests.execute(tx, "UPDATE locks SET n = n + 10 WHERE id = 2 /* handler-waits */");
        } catch (SQLException e) {
          swallowed.set(e); // a handler that catches and goes on
        }
        StoreTests.execute(tx, "INSERT INTO effects VALUES ('" + key.value() + "')");
        store.confirmClaim(tx, key);
        return null;
      })));
      awaitLockWait("handler-waits");
      s.execute("UPDATE locks SET n = n + 1 WHERE id = 1"); // the cycle: InnoDB picks a victim
      other.rollback();
      Throwable thrown = message.get(30, TimeUnit.SECONDS);
      assertThat((Throwable) swallowed.get()).as("the handler's statement was the deadlock's victim").isNotNull();
      assertThat(swallowed.get().getErrorCode()).isEqualTo(Dialect.ER_LOCK_DEADLOCK);
      assertThat(thrown).isInstanceOf(IllegalStateException.class).hasMessageContaining("no longer held");
    }
    assertThat(store.isProcessed(key)).isFalse();
    assertThat(StoreTests.count(pool, "SELECT count(*) FROM effects WHERE k = '" + key.value() + "'")).isZero();
  }
}
