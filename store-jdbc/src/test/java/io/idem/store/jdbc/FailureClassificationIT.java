package io.idem.store.jdbc;

import static io.idem.store.jdbc.StoreTests.MAX_ATTEMPTS;
import static io.idem.store.jdbc.StoreTests.awaitLockWait;
import static io.idem.store.jdbc.StoreTests.execute;
import static io.idem.store.jdbc.StoreTests.message;
import static io.idem.store.jdbc.StoreTests.pipeline;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.IdempotencyKey;
import io.idem.KeySource;
import io.idem.MessageHandler;
import io.idem.ProcessingOutcome;
import io.idem.TransactionRetryException;
import io.idem.fixtures.PostgresFixture;
import io.idem.fixtures.TcpProxy;
import io.idem.spi.ClaimResult;
import java.net.ConnectException;
import java.net.ServerSocket;
import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.ibatis.datasource.unpooled.UnpooledDataSource;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.TransactionIsolationLevel;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The failure classification table (docs/FAILURES.md), one test per row, each through a real
 * pipeline on the real PostgreSQL: the outcome, the acknowledgement call, and whether the attempt
 * counted. A counted failure (RETRY) dead-letters on the last attempt; an uncounted one (a store
 * outage, a transaction retry) is retried on the last attempt too, never dead-lettered.
 * Synchronised on events (pg_stat_activity lock waits), never on sleeps — except where a handler
 * sleeps past a server timeout, which is then the subject of the test.
 */
class FailureClassificationIT {
  private static final Pattern URL =
      Pattern.compile("jdbc:postgresql://([^/:,?]+)(?::(\\d+))?(/[^?]*)(\\?.*)?");

  private static String schema;
  private static String storeApp;
  /** The test's own connections: never cut, never the store's. */
  private static HikariDataSource admin;
  private static HikariDataSource storePool;
  /** Claim lock timeout 500 ms. */
  private static MyBatisProcessedEventStore store;
  private static ExecutorService threads;

  @BeforeAll
  static void setUp() throws Exception {
    schema = StoreTests.newSchema("classify");
    String id = UUID.randomUUID().toString().substring(0, 8);
    storeApp = "idem-classify-store-" + id;
    admin = StoreTests.pool(schema, "idem-classify-admin-" + id, null, c -> {});
    storePool = StoreTests.pool(schema, storeApp, null, c -> {});
    execute(admin,
        "CREATE TABLE effects (k text PRIMARY KEY)",
        "INSERT INTO effects VALUES ('taken')",
        "CREATE TABLE deferred (k text, CONSTRAINT deferred_k UNIQUE (k) DEFERRABLE INITIALLY DEFERRED)",
        "INSERT INTO deferred VALUES ('taken')",
        "CREATE TABLE guarded (k text)",
        "CREATE FUNCTION reject() RETURNS trigger LANGUAGE plpgsql AS"
            + " 'BEGIN RAISE EXCEPTION ''rejected by trigger''; END'",
        "CREATE TRIGGER reject BEFORE INSERT ON guarded FOR EACH ROW EXECUTE FUNCTION reject()",
        "CREATE TABLE has_view (id int)",
        "CREATE VIEW on_has_view AS SELECT * FROM has_view",
        "CREATE TABLE counters (id int PRIMARY KEY, n int NOT NULL)",
        "INSERT INTO counters VALUES (1, 0), (2, 0)");
    store = MyBatisProcessedEventStore.builder(MyBatisProcessedEventStoreIT.sessions(storePool))
        .createTableIfMissing(true).claimLockTimeout(Duration.ofMillis(500)).build();
    threads = Executors.newCachedThreadPool();
  }

  @AfterAll
  static void tearDown() {
    threads.shutdownNow();
    storePool.close();
    admin.close();
  }

  private record Run(ProcessingOutcome outcome, List<String> calls) {}

  private static Run run(
      MyBatisProcessedEventStore on, MessageHandler<SqlSession> handler, String key, int attempt,
      boolean retryIntegrityViolations) {
    RecordedAcknowledgement ack = new RecordedAcknowledgement();
    ProcessingOutcome outcome = pipeline(on, handler, retryIntegrityViolations)
        .process(message(key, "{}", attempt), ack);
    return new Run(outcome, ack.calls);
  }

  private static String key(String row) {
    return row + "-" + UUID.randomUUID();
  }

  private static boolean marker(MyBatisProcessedEventStore on, String key) {
    return on.isProcessed(new IdempotencyKey("classify", key, KeySource.HEADER));
  }

  /**
   * The handler's failure: attempt 1 is retried with backoff ({@code retry}, counted), the last
   * attempt is dead-lettered (MAX_ATTEMPTS_EXCEEDED); nothing committed either time.
   */
  private static void assertCountedHandlerFailure(MessageHandler<SqlSession> handler) {
    assertCountedHandlerFailure(store, handler, false);
  }

  private static void assertCountedHandlerFailure(
      MyBatisProcessedEventStore on, MessageHandler<SqlSession> handler, boolean retryIntegrity) {
    String key = key("counted");
    Run first = run(on, handler, key, 1, retryIntegrity);
    assertThat(first.outcome()).isEqualTo(ProcessingOutcome.RETRY);
    assertThat(first.outcome().countsAsAttempt()).isTrue();
    assertThat(first.calls()).containsExactly("retry");
    Run last = run(on, handler, key, MAX_ATTEMPTS, retryIntegrity);
    assertThat(last.outcome()).isEqualTo(ProcessingOutcome.DEAD_LETTERED);
    assertThat(last.calls()).containsExactly("deadLetter:MAX_ATTEMPTS_EXCEEDED");
    assertThat(marker(on, key)).isFalse();
  }

  /** An integrity violation: dead-lettered at once as NON_RETRYABLE on attempt 1 (counted). */
  private static void assertNonRetryable(MessageHandler<SqlSession> handler) {
    String key = key("integrity");
    Run first = run(store, handler, key, 1, false);
    assertThat(first.outcome()).isEqualTo(ProcessingOutcome.DEAD_LETTERED);
    assertThat(first.calls()).containsExactly("deadLetter:NON_RETRYABLE");
    assertThat(marker(store, key)).isFalse();
  }

  /**
   * Not the message's failure: on the LAST attempt still {@code expected}, told to the broker as
   * {@code retryWhenStoreAvailable}, never dead-lettered, and the handler ran {@code handlerRuns}
   * times.
   */
  private static void assertUncounted(
      Run run, ProcessingOutcome expected, AtomicInteger calls, int handlerRuns) {
    assertThat(run.outcome()).isEqualTo(expected);
    assertThat(run.outcome().countsAsAttempt()).isFalse();
    assertThat(run.calls()).containsExactly("retryWhenStoreAvailable");
    assertThat(calls).hasValue(handlerRuns);
  }

  private static byte[] sha256(String text) throws Exception {
    return MessageDigest.getInstance("SHA-256").digest(text.getBytes(java.nio.charset.StandardCharsets.UTF_8));
  }

  // ---- handler failures: counted -------------------------------------------------------------

  @Test
  void handlerExceptionWithAConnectExceptionCauseIsACountedHandlerFailure() {
    // issue 10, case 1: the handler's own HTTP call is refused; the store's connection is fine
    assertCountedHandlerFailure((m, session) -> {
      execute(session, "INSERT INTO effects VALUES ('" + UUID.randomUUID() + "')");
      throw new IllegalStateException("payment service call failed",
          new ConnectException("Connection refused"));
    });
  }

  @Test
  void dataException22IsACountedHandlerFailure() {
    assertCountedHandlerFailure((m, session) -> execute(session, "SELECT 'not a number'::int"));
  }

  @Test
  void uniqueViolation23505IsDeadLetteredNonRetryableOrRetriedWithIntegrityRetries() {
    MessageHandler<SqlSession> duplicateRow = (m, session) -> execute(session, "INSERT INTO effects VALUES ('taken')");
    assertNonRetryable(duplicateRow);
    assertCountedHandlerFailure(store, duplicateRow, true);
  }

  @Test
  void undefinedTable42P01IsACountedHandlerFailure() {
    assertCountedHandlerFailure((m, session) -> execute(session, "SELECT * FROM no_such_table"));
  }

  @Test
  void dependentObjectsStillExist2BP01IsACountedHandlerFailure() {
    assertCountedHandlerFailure((m, session) -> execute(session, "DROP TABLE has_view"));
  }

  @Test
  void triggerRaiseP0001IsACountedHandlerFailure() {
    assertCountedHandlerFailure((m, session) -> execute(session, "INSERT INTO guarded VALUES ('x')"));
  }

  @Test
  void deferredUniqueViolationAtCommitIsDeadLetteredNonRetryableOrRetriedWithIntegrityRetries() {
    // issue 10, case 2: the statement succeeds, the COMMIT fails with 23505
    MessageHandler<SqlSession> deferred = (m, session) -> execute(session, "INSERT INTO deferred VALUES ('taken')");
    assertNonRetryable(deferred);
    assertCountedHandlerFailure(store, deferred, true);
  }

  @Test
  void idleInTransactionSessionTimeoutIsACountedHandlerFailureNotAnOutage() {
    Duration timeout = Duration.ofMillis(200);
    assertCountedHandlerFailure((m, session) -> {
      execute(session, "SET LOCAL idle_in_transaction_session_timeout = '" + timeout.toMillis() + "ms'");
      Thread.sleep(timeout.multipliedBy(5).toMillis()); // the slow handler is the subject here
      execute(session, "INSERT INTO effects VALUES ('" + UUID.randomUUID() + "')");
    });
  }

  @Test
  void statementTimeout57014IsACountedHandlerFailure() {
    assertCountedHandlerFailure((m, session) -> {
      execute(session, "SET LOCAL statement_timeout = '100ms'");
      execute(session, "SELECT pg_sleep(30)");
    });
  }

  @Test
  void lockTimeout55P03OnAHandlerStatementIsACountedHandlerFailure() throws Exception {
    // the claim's transaction-local lock_timeout (500 ms) bounds the handler's statements too
    try (Connection holder = admin.getConnection()) {
      holder.setAutoCommit(false);
      exec(holder, "SELECT * FROM counters WHERE id = 1 FOR UPDATE");
      assertCountedHandlerFailure(
          (m, session) -> execute(session, "UPDATE counters SET n = n + 1 WHERE id = 1"));
      holder.rollback();
    }
  }

  // ---- store unavailable: not counted ------------------------------------------------------

  @Test
  void connectionRefusedIsStoreUnavailable() throws Exception {
    int closedPort;
    try (ServerSocket free = new ServerSocket(0)) {
      closedPort = free.getLocalPort();
    }
    PostgresFixture postgres = PostgresFixture.shared();
    UnpooledDataSource refused = new UnpooledDataSource("org.postgresql.Driver",
        "jdbc:postgresql://127.0.0.1:" + closedPort + "/postgres?connectTimeout=2", postgres.user(),
        postgres.password());
    MyBatisProcessedEventStore down = MyBatisProcessedEventStore.builder(
        MyBatisProcessedEventStoreIT.sessions(refused)).verifyTable(false).build();
    AtomicInteger calls = new AtomicInteger();
    Run run = run(down, (m, session) -> calls.incrementAndGet(), key("refused"), MAX_ATTEMPTS, false);
    assertUncounted(run, ProcessingOutcome.RETRY_STORE_UNAVAILABLE, calls, 0);
  }

  @Test
  void storeConnectionCutWithTheDatabaseUnreachableIsStoreUnavailable() throws Exception {
    PostgresFixture postgres = PostgresFixture.shared();
    Matcher m = URL.matcher(postgres.jdbcUrl());
    assertThat(m.matches()).as(postgres.jdbcUrl()).isTrue();
    try (TcpProxy proxy = new TcpProxy(m.group(1), m.group(2) == null ? 5432 : Integer.parseInt(m.group(2)))) {
      String url = "jdbc:postgresql://127.0.0.1:" + proxy.port() + m.group(3)
          + (m.group(4) == null ? "" : m.group(4));
      try (HikariDataSource proxied = StoreTests.pool(schema, "idem-classify-proxied", url, c -> {
        c.setConnectionTimeout(1_000);
        c.setValidationTimeout(250);
        c.addDataSourceProperty("connectTimeout", "2");
        c.addDataSourceProperty("socketTimeout", "5");
      })) {
        MyBatisProcessedEventStore cut = MyBatisProcessedEventStore.builder(
            MyBatisProcessedEventStoreIT.sessions(proxied)).build();
        AtomicInteger calls = new AtomicInteger();
        AtomicBoolean cutNow = new AtomicBoolean(true);
        String key = key("cut");
        MessageHandler<SqlSession> handler = (msg, session) -> {
          calls.incrementAndGet();
          execute(session, "INSERT INTO effects VALUES ('" + key + "')");
          if (cutNow.get()) {
            proxy.cut(); // the store's own connection breaks, and no new one can be had
          }
          execute(session, "INSERT INTO effects VALUES ('" + key + "-2')");
        };
        Run run = run(cut, handler, key, MAX_ATTEMPTS, false);
        assertUncounted(run, ProcessingOutcome.RETRY_STORE_UNAVAILABLE, calls, 1);
        proxy.restore();
        cutNow.set(false);
        assertThat(run(cut, handler, key, MAX_ATTEMPTS, false).outcome()).isEqualTo(ProcessingOutcome.PROCESSED);
      }
    }
  }

  @Test
  void poolTimeoutIsStoreUnavailable() throws Exception {
    try (HikariDataSource one = StoreTests.pool(schema, "idem-classify-one", null, c -> {
      c.setMaximumPoolSize(1);
      c.setConnectionTimeout(250);
    })) {
      MyBatisProcessedEventStore exhausted = MyBatisProcessedEventStore.builder(
          MyBatisProcessedEventStoreIT.sessions(one)).build();
      AtomicInteger calls = new AtomicInteger();
      try (Connection held = one.getConnection()) {
        Run run = run(exhausted, (m, session) -> calls.incrementAndGet(), key("pool"), MAX_ATTEMPTS, false);
        assertUncounted(run, ProcessingOutcome.RETRY_STORE_UNAVAILABLE, calls, 0);
        assertThat(held.isValid(1)).isTrue();
      }
    }
  }

  // ---- transaction retries: not counted ----------------------------------------------------

  @Test
  void serializationFailure40001UnderRepeatableReadIsATransactionRetry() throws Exception {
    MyBatisProcessedEventStore repeatable = MyBatisProcessedEventStore.builder(
            MyBatisProcessedEventStoreIT.sessions(storePool))
        .isolation(TransactionIsolationLevel.REPEATABLE_READ).claimLockTimeout(Duration.ZERO).build();
    AtomicInteger calls = new AtomicInteger();
    try (Connection concurrent = admin.getConnection()) {
      concurrent.setAutoCommit(false);
      exec(concurrent, "UPDATE counters SET n = n + 1 WHERE id = 1");
      Future<Run> pipeline = threads.submit(() -> run(repeatable, (m, session) -> {
        calls.incrementAndGet();
        // the claim took the snapshot; this waits for the concurrent update, which then commits
        execute(session, "UPDATE counters SET n = n + 1 WHERE id = 1");
      }, key("40001"), MAX_ATTEMPTS, false));
      awaitLockWait(admin, storeApp);
      concurrent.commit();
      assertUncounted(pipeline.get(30, TimeUnit.SECONDS), ProcessingOutcome.RETRY_TRANSACTION, calls, 1);
    }
  }

  @Test
  void deadlock40P01IsATransactionRetry() throws Exception {
    MyBatisProcessedEventStore unbounded = MyBatisProcessedEventStore.builder(
        MyBatisProcessedEventStoreIT.sessions(storePool)).claimLockTimeout(Duration.ZERO).build();
    AtomicInteger calls = new AtomicInteger();
    try (Connection other = admin.getConnection()) {
      other.setAutoCommit(false);
      try {
        // the pipeline's session detects the deadlock (its 1 s default runs out first)
        exec(other, "SET LOCAL deadlock_timeout = '60s'");
      } catch (SQLException notSuperuser) {
        other.rollback();
      }
      exec(other, "UPDATE counters SET n = n + 1 WHERE id = 2");
      Future<Run> pipeline = threads.submit(() -> run(unbounded, (m, session) -> {
        calls.incrementAndGet();
        execute(session, "UPDATE counters SET n = n + 1 WHERE id = 1");
        execute(session, "UPDATE counters SET n = n + 1 WHERE id = 2"); // waits for "other"
      }, key("40P01"), MAX_ATTEMPTS, false));
      awaitLockWait(admin, storeApp);
      exec(other, "UPDATE counters SET n = n + 1 WHERE id = 1"); // closes the cycle
      other.rollback();
      assertUncounted(pipeline.get(30, TimeUnit.SECONDS), ProcessingOutcome.RETRY_TRANSACTION, calls, 1);
    }
  }

  @Test
  void claimLockTimeoutIsATransactionRetry() throws Exception {
    String key = key("claim-lock");
    AtomicInteger calls = new AtomicInteger();
    try (Connection otherInstance = admin.getConnection()) {
      // another instance claimed the key and its transaction is still open
      otherInstance.setAutoCommit(false);
      exec(otherInstance, "INSERT INTO " + MyBatisProcessedEventStore.DEFAULT_TABLE
          + " (consumer_group, idempotency_key, key_source, payload_sha256) VALUES ('classify', '"
          + key + "', 'HEADER', decode(repeat('00', 32), 'hex'))");
      assertThatThrownBy(() -> store.inTransaction(tx -> store.claim(tx,
              new IdempotencyKey("classify", key, KeySource.HEADER), sha256("{}"))))
          .isInstanceOf(TransactionRetryException.class)
          .hasMessageContaining("claim lock timeout");
      Run run = run(store, (m, session) -> calls.incrementAndGet(), key, MAX_ATTEMPTS, false);
      assertUncounted(run, ProcessingOutcome.RETRY_TRANSACTION, calls, 0);
      otherInstance.rollback();
    }
    // the other instance rolled back: the key is free
    Run after = run(store, (m, session) -> calls.incrementAndGet(), key, MAX_ATTEMPTS, false);
    assertThat(after.outcome()).isEqualTo(ProcessingOutcome.PROCESSED);
    assertThat(after.calls()).containsExactly("ack");
    assertThat(store.<ClaimResult>inTransaction(tx -> store.claim(tx,
        new IdempotencyKey("classify", key, KeySource.HEADER), sha256("{}"))))
        .isEqualTo(ClaimResult.DUPLICATE);
  }

  private static void exec(Connection connection, String sql) throws SQLException {
    try (Statement s = connection.createStatement()) {
      s.execute(sql);
    }
  }
}
