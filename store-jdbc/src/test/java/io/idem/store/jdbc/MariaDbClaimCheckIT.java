package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.IdempotencyKey;
import io.idem.KeySource;
import io.idem.fixtures.MariaDbFixture;
import io.idem.spi.TransactionWork;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The check that a transaction still holds its claims, on MariaDB ({@link MariaDbClaimCheck}):
 * counted with the COMMIT, one statement for every key of the transaction — no round trip of its
 * own, per message and per batch (counted by the server, {@code Questions}, on a pool of one
 * connection) — refusing to commit when a marker is gone, also past the 1,000 keys of one
 * statement; and at once, one statement, in a session the store did not open. The swallowed
 * deadlock itself: {@link MariaDbSwallowedDeadlockIT}.
 */
class MariaDbClaimCheckIT {
  private static HikariDataSource pool;
  private static HikariDataSource onePool;
  private static SqlSessionFactory sessions;
  private static MyBatisProcessedEventStore store;
  private static byte[] fingerprint;

  @BeforeAll
  static void setUp() throws Exception {
    pool = MariaDbFixture.shared().newDatabase("claim_check");
    String database;
    try (Connection c = pool.getConnection()) {
      database = c.getCatalog();
    }
    StoreTests.execute(pool, "CREATE TABLE effects (k varchar(600) NOT NULL)");
    onePool = MariaDbFixture.shared().dataSource(database, 1);
    sessions = MyBatisProcessedEventStoreIT.sessions(onePool);
    store = MyBatisProcessedEventStore.builder(sessions).createTableIfMissing(true).build();
    fingerprint = MessageDigest.getInstance("SHA-256").digest("p".getBytes(StandardCharsets.UTF_8));
  }

  @AfterAll
  static void tearDown() {
    onePool.close();
    pool.close();
  }

  private static List<IdempotencyKey> keys(String prefix, int n) {
    List<IdempotencyKey> keys = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      keys.add(new IdempotencyKey("check", prefix + "-" + i, KeySource.HEADER));
    }
    return keys;
  }

  private static void insertEffects(SqlSession tx, List<IdempotencyKey> keys) throws SQLException {
    StringBuilder sql = new StringBuilder("INSERT INTO effects VALUES ");
    for (int i = 0; i < keys.size(); i++) {
      sql.append(i == 0 ? "(?)" : ", (?)");
    }
    try (PreparedStatement insert = tx.getConnection().prepareStatement(sql.toString())) {
      for (int i = 0; i < keys.size(); i++) {
        insert.setString(i + 1, keys.get(i).value());
      }
      insert.executeUpdate();
    }
  }

  /** Statements the server counted on this connection so far ({@code Questions}), this query included. */
  private static long questions(Connection connection) throws SQLException {
    try (Statement s = connection.createStatement();
        ResultSet rs = s.executeQuery("SHOW SESSION STATUS LIKE 'Questions'")) {
      rs.next();
      return rs.getLong(2);
    }
  }

  /**
   * The statements the server counted from the end of {@code work} to the next use of the pool's
   * one connection: the store's commit and MyBatis' auto-commit reset (and whatever the pool sends).
   */
  private static long statementsAfter(TransactionWork<SqlSession, Void> work) throws Exception {
    AtomicLong atEnd = new AtomicLong();
    store.inTransaction(tx -> {
      work.run(tx);
      atEnd.set(questions(tx.getConnection()));
      return null;
    });
    try (Connection c = onePool.getConnection()) {
      return questions(c) - atEnd.get() - 1;
    }
  }

  @Test
  void theCheckCostsNoRoundTripOfItsOwnPerMessageAndPerBatch() throws Exception {
    String run = "rt" + System.nanoTime();
    long unchecked = statementsAfter(tx -> {
      List<IdempotencyKey> keys = keys(run + "-none", 1);
      store.claim(tx, keys.get(0), fingerprint);
      insertEffects(tx, keys);
      return null;
    });
    assertThat(unchecked).as("COMMIT and set autocommit=1").isBetween(1L, 2L);
    long perMessage = statementsAfter(tx -> {
      List<IdempotencyKey> keys = keys(run + "-one", 1);
      store.claim(tx, keys.get(0), fingerprint);
      insertEffects(tx, keys);
      store.confirmClaim(tx, keys.get(0));
      return null;
    });
    long batchHandler = statementsAfter(tx -> {
      List<IdempotencyKey> keys = keys(run + "-batch", 100);
      store.claimAll(tx, keys, Collections.nCopies(keys.size(), fingerprint));
      insertEffects(tx, keys);
      store.confirmClaims(tx, keys);
      return null;
    });
    long perMessageHandlers = statementsAfter(tx -> {
      List<IdempotencyKey> keys = keys(run + "-each", 100);
      store.claimAll(tx, keys, Collections.nCopies(keys.size(), fingerprint));
      for (IdempotencyKey key : keys) {
        insertEffects(tx, List.of(key));
        store.confirmClaim(tx, key);
      }
      return null;
    });
    assertThat(List.of(perMessage, batchHandler, perMessageHandlers)).as("after the work, as without a check")
        .containsOnly(unchecked);
    assertThat(store.isProcessed(keys(run + "-batch", 100).get(99))).isTrue();
    assertThat(store.isProcessed(keys(run + "-each", 100).get(99))).isTrue();
    assertThat(StoreTests.count(pool, "SELECT count(*) FROM effects WHERE k LIKE '" + run + "-%'")).isEqualTo(202);
  }

  @Test
  void theConfirmsThemselvesSendNothing() throws Exception {
    String run = "none" + System.nanoTime();
    long sent = store.inTransaction(tx -> {
      List<IdempotencyKey> keys = keys(run, 100);
      store.claimAll(tx, keys, Collections.nCopies(keys.size(), fingerprint));
      long before = questions(tx.getConnection());
      store.confirmClaims(tx, keys);
      for (IdempotencyKey key : keys) {
        store.confirmClaim(tx, key);
      }
      return questions(tx.getConnection()) - before - 1;
    });
    assertThat(sent).isZero();
  }

  /** 1,001 keys: two statements at the commit, the first 1,000 counted before the COMMIT's. */
  @ParameterizedTest(name = "marker removed: {0}")
  @ValueSource(ints = {-1, 0, 999, 1000})
  void pastOneThousandKeysEveryMarkerIsCounted(int removed) throws Exception {
    String run = "many" + removed + "-" + System.nanoTime();
    List<IdempotencyKey> keys = keys(run, 1001);
    Throwable thrown = catchThrowable(() -> store.inTransaction(tx -> {
      store.claimAll(tx, keys, Collections.nCopies(keys.size(), fingerprint));
      if (removed >= 0) {
        // a marker gone from the transaction, as after a rollback under the handler
        StoreTests.execute(tx, "DELETE FROM idem_processed_events WHERE idempotency_key = '"
            + keys.get(removed).value() + "'");
      }
      insertEffects(tx, keys);
      store.confirmClaims(tx, keys);
      return null;
    }));
    long effects = StoreTests.count(pool, "SELECT count(*) FROM effects WHERE k LIKE '" + run + "-%'");
    if (removed < 0) {
      assertThat(thrown).isNull();
      assertThat(store.isProcessed(keys.get(0))).isTrue();
      assertThat(store.isProcessed(keys.get(1000))).isTrue();
      assertThat(effects).isEqualTo(1001);
    } else {
      assertThat(thrown).isInstanceOf(IllegalStateException.class).hasMessageContaining("no longer held")
          .hasMessageContaining("1001 keys");
      assertThat(store.isProcessed(keys.get(removed == 0 ? 1 : 0))).isFalse();
      assertThat(effects).isZero();
    }
  }

  /** A session the store did not open (the Spring starter's): checked at once, one statement. */
  @Test
  void inASessionTheStoreDidNotOpenTheKeysAreCountedAtOnce() throws Exception {
    String run = "own" + System.nanoTime();
    List<IdempotencyKey> keys = keys(run, 3);
    try (SqlSession session = sessions.openSession(false)) {
      store.claimAll(session, keys, Collections.nCopies(keys.size(), fingerprint));
      long before = questions(session.getConnection());
      store.confirmClaims(session, keys);
      assertThat(questions(session.getConnection()) - before - 1).as("statements of the check").isEqualTo(1);
      StoreTests.execute(session, "DELETE FROM idem_processed_events WHERE idempotency_key = '"
          + keys.get(2).value() + "'");
      assertThatThrownBy(() -> store.confirmClaims(session, keys)).isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("no longer held");
      assertThatThrownBy(() -> store.confirmClaim(session, keys.get(2))).isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("no longer held");
      store.confirmClaim(session, keys.get(0));
      session.rollback(true);
    }
  }
}
