package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.idem.IdempotencyKey;
import io.idem.IdempotentConsumer;
import io.idem.KeySource;
import io.idem.ProcessingOutcome;
import io.idem.fixtures.PgjdbcRoundTrips;
import io.idem.fixtures.PostgresFixture;
import io.idem.spi.ClaimResult;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.ibatis.datasource.pooled.PooledDataSource;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@link MyBatisProcessedEventStore#executeBeforeCommit}: a statement sent in the COMMIT's round
 * trip, all or nothing with the transaction; and {@link
 * MyBatisProcessedEventStore.Builder#restoreLockTimeoutAfterClaim}: the claim lock timeout bounds
 * the claim alone, with no round trip of its own. Round trips counted from pgjdbc's protocol log
 * ({@link PgjdbcRoundTrips}) on MyBatis' own pool (no validation query). The connections are given
 * {@code lock_timeout = 5s} by the URL (the server-side default a restored claim must give back).
 */
class StatementsBeforeCommitIT {
  private static final String APPLICATION = "idem-before-commit-" + UUID.randomUUID().toString().substring(0, 8);
  private static String url;
  private static PooledDataSource pool;
  private static MyBatisProcessedEventStore restoring;
  private static MyBatisProcessedEventStore keeping;

  @BeforeAll
  static void setUp() throws Exception {
    String schema = StoreTests.newSchema("before_commit");
    PostgresFixture postgres = PostgresFixture.shared();
    String base = postgres.jdbcUrl();
    url = base + (base.contains("?") ? "&" : "?") + "currentSchema=" + schema
        + "&ApplicationName=" + APPLICATION + "&options=-c%20lock_timeout=5s";
    pool = pool();
    StoreTests.execute(pool, "CREATE TABLE effects (k text PRIMARY KEY)",
        "CREATE TABLE answers (k text PRIMARY KEY, body bytea NOT NULL, status int NOT NULL)",
        "INSERT INTO effects VALUES ('held')");
    restoring = store(pool, true);
    keeping = store(pool, false);
  }

  private static PooledDataSource pool() {
    PostgresFixture postgres = PostgresFixture.shared();
    return new PooledDataSource("org.postgresql.Driver", url, postgres.user(), postgres.password());
  }

  private static MyBatisProcessedEventStore store(PooledDataSource on, boolean restore) {
    return MyBatisProcessedEventStore.builder(MyBatisProcessedEventStoreIT.sessions(on))
        .claimLockTimeout(java.time.Duration.ofMillis(1)).restoreLockTimeoutAfterClaim(restore)
        .createTableIfMissing(true).build();
  }

  @AfterAll
  static void tearDown() {
    pool.forceCloseAll();
  }

  private static void insertEffect(SqlSession session, String key) throws SQLException {
    try (PreparedStatement ps = session.getConnection().prepareStatement("INSERT INTO effects (k) VALUES (?)")) {
      ps.setString(1, key);
      ps.executeUpdate();
    }
  }

  private static String show(SqlSession session) throws SQLException {
    try (Statement s = session.getConnection().createStatement(); ResultSet row = s.executeQuery("SHOW lock_timeout")) {
      row.next();
      return row.getString(1);
    }
  }

  private static final String ANSWER = "INSERT INTO answers (k, body, status) VALUES (?, ?, ?)";

  /** A pipeline whose handler inserts the effect and queues the answer's INSERT for the commit. */
  private static IdempotentConsumer<SqlSession> answering(MyBatisProcessedEventStore store) {
    return StoreTests.pipeline(store, (message, session) -> {
      String key = message.header("idempotency-key");
      insertEffect(session, key);
      MyBatisProcessedEventStore.executeBeforeCommit(session, ANSWER, key,
          ("answer of " + key).getBytes(StandardCharsets.UTF_8), 201);
    }, false);
  }

  @Test
  void aNewKeyCostsTheClaimTheHandlersStatementAndOneRoundTripForTheQueuedStatementCheckAndCommit()
      throws Exception {
    IdempotentConsumer<SqlSession> pipeline = answering(restoring);
    pipeline.process(StoreTests.message("warm-" + UUID.randomUUID(), "{}", 1), new RecordedAcknowledgement());
    String key = "new-" + UUID.randomUUID();
    List<ProcessingOutcome> outcome = new ArrayList<>();
    List<String> sent = PgjdbcRoundTrips.frontendMessages(() -> outcome.add(
        pipeline.process(StoreTests.message(key, "{}", 1), new RecordedAcknowledgement())));
    assertThat(outcome).containsExactly(ProcessingOutcome.PROCESSED);
    assertThat(PgjdbcRoundTrips.roundTrips(sent)).as("round trips of %s", sent).isEqualTo(3);
    List<List<String>> trips = PgjdbcRoundTrips.byRoundTrip(sent);
    assertThat(String.join("\n", trips.get(0))).as("the claim's round trip")
        .contains("idem.lock_timeout_before_claim").contains("WITH ins AS");
    assertThat(String.join("\n", trips.get(1))).contains("INSERT INTO effects");
    assertThat(String.join("\n", trips.get(2))).as("the COMMIT's round trip")
        .contains("INSERT INTO answers").contains("txid_current_if_assigned").contains("COMMIT");
    assertThat(StoreTests.count(pool, "SELECT count(*) FROM answers WHERE k = '" + key + "' AND status = 201"))
        .isEqualTo(1);
    assertThat(StoreTests.count(pool, "SELECT count(*) FROM effects WHERE k = '" + key + "'")).isEqualTo(1);
  }

  @Test
  void aQueuedStatementThatFailsAbortsTheCommitAndItsFailureIsTheTransactions() throws Exception {
    String key = "failing-" + UUID.randomUUID();
    IdempotencyKey idem = new IdempotencyKey("classify", key, KeySource.HEADER);
    byte[] fingerprint = MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.UTF_8));
    assertThatThrownBy(() -> restoring.inTransaction(session -> {
      assertThat(restoring.claim(session, idem, fingerprint)).isEqualTo(ClaimResult.CLAIMED);
      insertEffect(session, key);
      MyBatisProcessedEventStore.executeBeforeCommit(session, ANSWER, key, new byte[] {1}, 201);
      // not a number: 22P02 at the commit, after the first queued statement ran
      MyBatisProcessedEventStore.executeBeforeCommit(session, "SELECT ?::int", "not a number");
      return null;
    })).isInstanceOf(SQLException.class).satisfies(e -> assertThat(((SQLException) e).getSQLState()).isEqualTo("22P02"));
    assertThat(StoreTests.count(pool, "SELECT count(*) FROM effects WHERE k = '" + key + "'")).isZero();
    assertThat(StoreTests.count(pool, "SELECT count(*) FROM answers WHERE k = '" + key + "'")).isZero();
    assertThat(restoring.isProcessed(idem)).isFalse();
    // the key is free again: the same work without the failing statement commits everything
    restoring.inTransaction(session -> {
      assertThat(restoring.claim(session, idem, fingerprint)).isEqualTo(ClaimResult.CLAIMED);
      insertEffect(session, key);
      MyBatisProcessedEventStore.executeBeforeCommit(session, ANSWER, key, new byte[] {1}, 201);
      return null;
    });
    assertThat(StoreTests.count(pool, "SELECT count(*) FROM answers WHERE k = '" + key + "'")).isEqualTo(1);
    assertThat(restoring.isProcessed(idem)).isTrue();
  }

  @Test
  void anIntegrityViolationOfAQueuedStatementIsNotRetried() throws Exception {
    String key = "taken-" + UUID.randomUUID();
    StoreTests.execute(pool, "INSERT INTO answers VALUES ('" + key + "', '\\x00', 200)");
    List<ProcessingOutcome> outcome = new ArrayList<>();
    outcome.add(answering(restoring).process(StoreTests.message(key, "{}", 1), new RecordedAcknowledgement()));
    assertThat(outcome).containsExactly(ProcessingOutcome.DEAD_LETTERED);
    assertThat(StoreTests.count(pool, "SELECT count(*) FROM effects WHERE k = '" + key + "'")).isZero();
  }

  @Test
  void withoutAClaimTheStatementRunsAtOnce() throws Exception {
    String key = "unclaimed-" + UUID.randomUUID();
    List<String> sent = PgjdbcRoundTrips.frontendMessages(() -> {
      try {
        restoring.inTransaction(session -> {
          MyBatisProcessedEventStore.executeBeforeCommit(session, ANSWER, key, new byte[] {2}, 200);
          assertThat(StoreTests.count(pool, "SELECT count(*) FROM answers WHERE k = '" + key + "'"))
              .as("not committed yet").isZero();
          return null;
        });
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    });
    assertThat(String.join("\n", PgjdbcRoundTrips.byRoundTrip(sent).get(0))).contains("INSERT INTO answers");
    assertThat(StoreTests.count(pool, "SELECT count(*) FROM answers WHERE k = '" + key + "'")).isEqualTo(1);
  }

  @Test
  void aRestoredClaimGivesTheHandlerTheConnectionsLockTimeoutAndItsLockWaits() throws Exception {
    List<String> seen = new CopyOnWriteArrayList<>();
    IdempotentConsumer<SqlSession> waiting = StoreTests.pipeline(restoring, (message, session) -> {
      seen.add(show(session));
      try (Statement s = session.getConnection().createStatement()) {
        s.executeUpdate("UPDATE effects SET k = k WHERE k = 'held'"); // waits for the test's lock
      }
    }, false);
    ExecutorService worker = Executors.newSingleThreadExecutor();
    try (Connection holder = pool.getConnection()) {
      holder.setAutoCommit(false);
      try (Statement s = holder.createStatement()) {
        s.execute("SELECT k FROM effects WHERE k = 'held' FOR UPDATE");
      }
      Future<ProcessingOutcome> outcome = worker.submit(() -> waiting.process(
          StoreTests.message("waits-" + UUID.randomUUID(), "{}", 1), new RecordedAcknowledgement()));
      // the handler waits far longer than the claim's 1 ms: its lock wait is the connection's 5 s
      StoreTests.awaitLockWait(pool, APPLICATION);
      holder.commit();
      assertThat(outcome.get(30, TimeUnit.SECONDS)).isEqualTo(ProcessingOutcome.PROCESSED);
    } finally {
      worker.shutdownNow();
    }
    assertThat(seen).containsExactly("5s");
    // the store that keeps the claim's lock timeout: the handler runs under the 1 ms
    seen.clear();
    StoreTests.pipeline(keeping, (message, session) -> seen.add(show(session)), false)
        .process(StoreTests.message("kept-" + UUID.randomUUID(), "{}", 1), new RecordedAcknowledgement());
    assertThat(seen).containsExactly("1ms");
  }

  @Test
  void aRestoredClaimGivesBackASessionSetLockTimeoutNotTheServersDefault() throws Exception {
    PooledDataSource one = pool();
    one.setPoolMaximumActiveConnections(1);
    one.setPoolMaximumIdleConnections(1);
    try {
      MyBatisProcessedEventStore store = store(one, true);
      List<String> seen = new CopyOnWriteArrayList<>();
      IdempotentConsumer<SqlSession> pipeline = StoreTests.pipeline(store, (message, session) -> {
        seen.add(show(session));
        if (message.header("idempotency-key").startsWith("set-")) {
          StoreTests.execute(session, "SET SESSION lock_timeout = '7s'"); // kept after the COMMIT
        }
      }, false);
      pipeline.process(StoreTests.message("set-" + UUID.randomUUID(), "{}", 1), new RecordedAcknowledgement());
      pipeline.process(StoreTests.message("after-" + UUID.randomUUID(), "{}", 1), new RecordedAcknowledgement());
      assertThat(seen).containsExactly("5s", "7s");
    } finally {
      one.forceCloseAll();
    }
  }

  /**
   * In a run the next claim travels with the COMMIT, restored there too (its answer is then the
   * fourth result set: check, saved timeout, claim); a transaction with a queued statement carries
   * nothing and commits alone.
   */
  @Test
  void aRunCarriesARestoredClaimButNotPastAQueuedStatement() throws Exception {
    List<String> seen = new CopyOnWriteArrayList<>();
    IdempotentConsumer<SqlSession> pipeline = StoreTests.pipeline(restoring, (message, session) -> {
      String key = message.header("idempotency-key");
      seen.add(show(session));
      insertEffect(session, key);
      if (key.startsWith("queued-")) {
        MyBatisProcessedEventStore.executeBeforeCommit(session, ANSWER, key, new byte[] {3}, 200);
      }
    }, false);
    List<io.idem.InboundMessage> messages = List.of(StoreTests.message("run-a-" + UUID.randomUUID(), "{}", 1),
        StoreTests.message("run-b-" + UUID.randomUUID(), "{}", 1),
        StoreTests.message("queued-" + UUID.randomUUID(), "{}", 1),
        StoreTests.message("run-c-" + UUID.randomUUID(), "{}", 1));
    List<Long> trips = new ArrayList<>();
    List<ProcessingOutcome> outcomes = new ArrayList<>();
    try (io.idem.MessageRun run = pipeline.openRun()) {
      for (int i = 0; i < messages.size(); i++) {
        io.idem.InboundMessage next = i + 1 < messages.size() ? messages.get(i + 1) : null;
        io.idem.InboundMessage message = messages.get(i);
        List<String> sent = PgjdbcRoundTrips.frontendMessages(
            () -> outcomes.add(run.process(message, new RecordedAcknowledgement(), () -> next)));
        trips.add(PgjdbcRoundTrips.roundTrips(sent));
      }
    }
    assertThat(outcomes).containsOnly(ProcessingOutcome.PROCESSED).hasSize(4);
    // each handler: SHOW, INSERT. a: claim, SHOW, INSERT, check + COMMIT + b's claim; b: SHOW,
    // INSERT, check + COMMIT + the queued one's claim; queued: SHOW, INSERT, its statement + check
    // + COMMIT (nothing carried); c: claim, SHOW, INSERT, check + COMMIT
    assertThat(trips).containsExactly(4L, 3L, 3L, 4L);
    assertThat(seen).as("every handler, carried claim or not, under the connection's lock_timeout")
        .containsOnly("5s").hasSize(4);
    for (io.idem.InboundMessage message : messages) {
      assertThat(StoreTests.count(pool, "SELECT count(*) FROM effects WHERE k = '"
          + message.header("idempotency-key") + "'")).isEqualTo(1);
    }
    assertThat(StoreTests.count(pool, "SELECT count(*) FROM answers WHERE k = '"
        + messages.get(2).header("idempotency-key") + "'")).isEqualTo(1);
  }

  @Test
  void aBatchClaimIsRestoredToo() throws Exception {
    List<String> seen = new CopyOnWriteArrayList<>();
    IdempotentConsumer<SqlSession> batch = IdempotentConsumer.builder(restoring).consumerGroup("classify")
        .batchHandler((news, session) -> seen.add(show(session))).build();
    List<io.idem.InboundMessage> messages = List.of(StoreTests.message("b1-" + UUID.randomUUID(), "{}", 1),
        StoreTests.message("b2-" + UUID.randomUUID(), "{}", 1));
    assertThat(batch.processBatch(messages, List.of(new RecordedAcknowledgement(), new RecordedAcknowledgement())))
        .containsOnly(ProcessingOutcome.PROCESSED);
    assertThat(seen).containsExactly("5s");
  }
}
