package io.idem.store.jdbc;

import static io.idem.store.jdbc.StoreTests.execute;
import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.MessageHandler;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.spi.Acknowledgement;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.TransactionIsolationLevel;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Transaction retries cannot loop uncounted (docs/FAILURES.md, issue 23 cases 2 and 3), on the
 * real PostgreSQL: a serialization failure (40001) the handler gets on its own connection is the
 * handler's failure, an attempt, and dead-letters after maxAttempts; one on Idem's own session is
 * retried uncounted at most maxTransactionRetries times in a row, then counts; a statement_timeout
 * shorter than the claim lock timeout ends a claim's wait as a transaction retry, not an outage.
 * Every 40001 is produced by PostgreSQL (a REPEATABLE READ update losing to a committed one).
 */
class TransactionRetriesAreBoundedIT {
  private static final int MAX_ATTEMPTS = 3;
  private static final int MAX_TRANSACTION_RETRIES = 4;
  /** Deliveries a test may take before it calls the message looping. */
  private static final int LOOP = 60;

  private static HikariDataSource admin;
  private static HikariDataSource storePool;
  private static HikariDataSource handlerPool;
  private static HikariDataSource shortStatements;
  private static String schema;

  @BeforeAll
  static void setUp() throws Exception {
    schema = StoreTests.newSchema("tx_retries");
    String id = UUID.randomUUID().toString().substring(0, 8);
    admin = StoreTests.pool(schema, "idem-txr-admin-" + id, null, c -> {});
    storePool = StoreTests.pool(schema, "idem-txr-store-" + id, null, c -> {});
    handlerPool = StoreTests.pool(schema, "idem-txr-handler-" + id, null, c -> {});
    shortStatements = StoreTests.pool(schema, "idem-txr-short-" + id, null,
        c -> c.setConnectionInitSql("SET statement_timeout = '300ms'"));
    execute(admin, "CREATE TABLE counters (id int PRIMARY KEY, n int NOT NULL)",
        "INSERT INTO counters VALUES (1, 0), (2, 0)");
  }

  @AfterAll
  static void tearDown() {
    for (HikariDataSource pool : new HikariDataSource[] {shortStatements, handlerPool, storePool, admin}) {
      if (pool != null) {
        pool.close();
      }
    }
  }

  private static IdempotentConsumer<SqlSession> pipeline(MyBatisProcessedEventStore store,
      MessageHandler<SqlSession> handler) {
    return IdempotentConsumer.builder(store).consumerGroup("tx-retries").handler(handler)
        .retryPolicy(RetryPolicy.builder().maxAttempts(MAX_ATTEMPTS).maxTransactionRetries(MAX_TRANSACTION_RETRIES)
            .initialBackoff(Duration.ofMillis(10)).maxBackoff(Duration.ofMillis(10)).build())
        .build();
  }

  /** Where a delivery ended, as the broker saw it. */
  private static final class Settled implements Acknowledgement {
    @Nullable String call;
    @Nullable DeadLetterReason reason;

    @Override
    public void ack() {
      call = "ack";
    }

    @Override
    public void retry(Duration delay) {
      call = "retry";
    }

    @Override
    public void retryWhenStoreAvailable(Duration delay) {
      call = "retryWhenStoreAvailable";
    }

    @Override
    public void deadLetter(DeadLetterReason reason) {
      call = "deadLetter";
      this.reason = reason;
    }
  }

  /**
   * Delivers {@code key} as a broker would until it is settled for good (acked or dead-lettered),
   * at most {@link #LOOP} times: the broker's attempt moves on a counted failure only.
   */
  private static List<ProcessingOutcome> deliverUntilSettled(IdempotentConsumer<SqlSession> pipeline,
      String key, Settled[] last) {
    List<ProcessingOutcome> outcomes = new ArrayList<>();
    int attempt = 1;
    for (int i = 0; i < LOOP; i++) {
      Settled settled = new Settled();
      InboundMessage message = InboundMessage.builder("orders", "{}".getBytes(StandardCharsets.UTF_8))
          .header("idempotency-key", key).deliveryAttempt(attempt).build();
      ProcessingOutcome outcome = pipeline.process(message, settled);
      outcomes.add(outcome);
      last[0] = settled;
      if ("ack".equals(settled.call) || "deadLetter".equals(settled.call)) {
        return outcomes;
      }
      if (outcome == ProcessingOutcome.RETRY) {
        attempt++;
      }
    }
    return outcomes;
  }

  /** A REPEATABLE READ update of row {@code id} on {@code c} that loses to a committed one: 40001. */
  private static void loseASerializationRace(Connection c, int id) throws SQLException {
    c.setAutoCommit(false);
    c.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
    try (Statement s = c.createStatement()) {
      s.executeQuery("SELECT n FROM counters WHERE id = " + id).close(); // the snapshot
      execute(admin, "UPDATE counters SET n = n + 1 WHERE id = " + id); // committed meanwhile
      s.executeUpdate("UPDATE counters SET n = n + 1 WHERE id = " + id);
    } finally {
      c.rollback();
    }
  }

  @Test
  void aSerializationFailureOnTheHandlersOwnConnectionIsAnAttemptAndDeadLetters() throws Exception {
    MyBatisProcessedEventStore store = MyBatisProcessedEventStore.builder(
        MyBatisProcessedEventStoreIT.sessions(storePool)).createTableIfMissing(true).build();
    AtomicInteger runs = new AtomicInteger();
    AtomicInteger sqlState40001 = new AtomicInteger();
    IdempotentConsumer<SqlSession> pipeline = pipeline(store, (message, session) -> {
      runs.incrementAndGet();
      try (Connection own = handlerPool.getConnection()) {
        loseASerializationRace(own, 1);
      } catch (SQLException e) {
        if ("40001".equals(e.getSQLState())) {
          sqlState40001.incrementAndGet();
        }
        throw e;
      }
    });
    Settled[] last = new Settled[1];
    List<ProcessingOutcome> outcomes = deliverUntilSettled(pipeline, "own-" + UUID.randomUUID(), last);
    assertThat(sqlState40001).as("PostgreSQL raised 40001 on every run").hasValue(runs.get());
    assertThat(outcomes).as("never an uncounted transaction retry").containsExactly(
        ProcessingOutcome.RETRY, ProcessingOutcome.RETRY, ProcessingOutcome.DEAD_LETTERED);
    assertThat(runs).hasValue(MAX_ATTEMPTS);
    assertThat(last[0].reason.cause()).isEqualTo(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED);
  }

  @Test
  void aSerializationFailureOnIdemsSessionIsRetriedUncountedAtMostMaxTransactionRetriesInARow() throws Exception {
    MyBatisProcessedEventStore repeatable = MyBatisProcessedEventStore.builder(
            MyBatisProcessedEventStoreIT.sessions(storePool))
        .createTableIfMissing(true)
        .isolation(TransactionIsolationLevel.REPEATABLE_READ).claimLockTimeout(Duration.ZERO).build();
    AtomicInteger runs = new AtomicInteger();
    IdempotentConsumer<SqlSession> pipeline = pipeline(repeatable, (message, session) -> {
      runs.incrementAndGet();
      // the claim took the transaction's snapshot; a concurrent update commits; this one loses
      execute(admin, "UPDATE counters SET n = n + 1 WHERE id = 2");
      StoreTests.execute(session, "UPDATE counters SET n = n + 1 WHERE id = 2");
    });
    Settled[] last = new Settled[1];
    List<ProcessingOutcome> outcomes = deliverUntilSettled(pipeline, "idem-" + UUID.randomUUID(), last);
    List<ProcessingOutcome> perAttempt = new ArrayList<>();
    for (int i = 0; i < MAX_TRANSACTION_RETRIES; i++) {
      perAttempt.add(ProcessingOutcome.RETRY_TRANSACTION);
    }
    List<ProcessingOutcome> expected = new ArrayList<>();
    for (int attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      expected.addAll(perAttempt);
      expected.add(attempt < MAX_ATTEMPTS ? ProcessingOutcome.RETRY : ProcessingOutcome.DEAD_LETTERED);
    }
    assertThat(outcomes).isEqualTo(expected);
    assertThat(runs).hasValue(MAX_ATTEMPTS * (MAX_TRANSACTION_RETRIES + 1));
    assertThat(last[0].reason.cause()).isEqualTo(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED);
  }

  @Test
  void aStatementTimeoutShorterThanTheClaimLockTimeoutIsATransactionRetryNotAnOutage() throws Exception {
    MyBatisProcessedEventStore store = MyBatisProcessedEventStore.builder(
            MyBatisProcessedEventStoreIT.sessions(shortStatements))
        .createTableIfMissing(true).claimLockTimeout(Duration.ofSeconds(5)).build();
    AtomicInteger runs = new AtomicInteger();
    IdempotentConsumer<SqlSession> pipeline = pipeline(store, (message, session) -> runs.incrementAndGet());
    String key = "held-" + UUID.randomUUID();
    try (Connection holder = admin.getConnection()) {
      holder.setAutoCommit(false);
      try (Statement s = holder.createStatement()) {
        // another instance's open transaction holds the key's claim
        s.executeUpdate("INSERT INTO idem_processed_events (consumer_group, idempotency_key, key_source,"
            + " payload_sha256) VALUES ('tx-retries', '" + key + "', 'HEADER', sha256('x'::bytea))");
      }
      Settled settled = new Settled();
      ProcessingOutcome outcome = pipeline.process(InboundMessage.builder("orders",
          "{}".getBytes(StandardCharsets.UTF_8)).header("idempotency-key", key).build(), settled);
      assertThat(outcome).as("the claim's wait cut by statement_timeout (57014)")
          .isEqualTo(ProcessingOutcome.RETRY_TRANSACTION);
      assertThat(pipeline.storeHealth().consecutiveFailures()).as("no outage counted").isZero();
      assertThat(runs).hasValue(0);
      holder.rollback();
    }
    Settled settled = new Settled();
    assertThat(pipeline.process(InboundMessage.builder("orders", "{}".getBytes(StandardCharsets.UTF_8))
        .header("idempotency-key", key).build(), settled)).isEqualTo(ProcessingOutcome.PROCESSED);
  }

  @Test
  void aClaimSentWithTheCommitAndCutByStatementTimeoutIsNotWaitedForAgain() throws Exception {
    StoreTests.execute(shortStatements, "CREATE TABLE IF NOT EXISTS effects (k text NOT NULL)");
    MyBatisProcessedEventStore store = MyBatisProcessedEventStore.builder(
            MyBatisProcessedEventStoreIT.sessions(shortStatements))
        .createTableIfMissing(true).claimLockTimeout(Duration.ofSeconds(5)).build();
    IdempotentConsumer<SqlSession> pipeline = pipeline(store, StoreTests.INSERT_KEY_INTO_EFFECTS);
    String a = "run-a-" + UUID.randomUUID();
    String b = "run-b-" + UUID.randomUUID();
    try (Connection holder = admin.getConnection()) {
      holder.setAutoCommit(false);
      try (Statement s = holder.createStatement()) {
        s.executeUpdate("INSERT INTO idem_processed_events (consumer_group, idempotency_key, key_source,"
            + " payload_sha256) VALUES ('tx-retries', '" + b + "', 'HEADER', sha256('x'::bytea))");
      }
      InboundMessage next = InboundMessage.builder("orders", "{}".getBytes(StandardCharsets.UTF_8))
          .header("idempotency-key", b).build();
      try (io.idem.MessageRun run = pipeline.openRun()) {
        Settled aSettled = new Settled();
        assertThat(run.process(InboundMessage.builder("orders", "{}".getBytes(StandardCharsets.UTF_8))
            .header("idempotency-key", a).build(), aSettled, () -> next))
            .as("a's COMMIT stands though b's claim beside it was cancelled (57014)")
            .isEqualTo(ProcessingOutcome.PROCESSED);
        assertThat(aSettled.call).isEqualTo("ack");
        List<String> sent = RoundTripsIT.frontendMessages(() -> assertThat(run.process(next, new Settled(), () -> null))
            .as("b: a transaction retry at once, not an outage").isEqualTo(ProcessingOutcome.RETRY_TRANSACTION));
        assertThat(RoundTripsIT.roundTrips(sent)).as("b is not made to wait a second time: %s", sent).isZero();
      }
      assertThat(pipeline.storeHealth().consecutiveFailures()).isZero();
      holder.rollback();
    }
  }
}
