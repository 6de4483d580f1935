package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.IdempotencyKey;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.KeySource;
import io.idem.KeyedMessage;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.fixtures.MariaDbFixture;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * "The transaction is still the claim's" on MariaDB: a handler that swallows a deadlock (1213)
 * goes on in a new transaction, because InnoDB rolled back the whole one the claim was in; the
 * marker count sent with the COMMIT finds nothing, the message fails (a handler failure), and
 * neither the marker nor the handler's later write commits. Without that check the store would
 * commit the handler's later write alone and the redelivery would apply the message again. The
 * same for a batch (one count for all its keys): not committed, not acked, redone message by
 * message.
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

  /**
   * Runs {@code work} on another thread while this one makes it the victim of a deadlock: the work
   * must update {@code locks} row 1, then row 2 in a statement marked {@code handler-waits} (which
   * waits for this thread's transaction, then fails with 1213 once this thread updates row 1).
   * This thread's transaction is the larger one, so InnoDB rolls back the work's. Returns what the
   * work threw, or {@code null}.
   */
  private static Throwable deadlocking(Callable<?> work) throws Exception {
    try (Connection other = pool.getConnection(); Statement s = other.createStatement()) {
      other.setAutoCommit(false);
      s.execute("INSERT INTO ballast SELECT seq FROM seq_1_to_200");
      s.execute("UPDATE locks SET n = n + 1 WHERE id = 2");
      Future<Throwable> running = threads.submit(() -> catchThrowable(work::call));
      awaitLockWait("handler-waits");
      s.execute("UPDATE locks SET n = n + 1 WHERE id = 1"); // the cycle: InnoDB picks a victim
      other.rollback();
      return running.get(30, TimeUnit.SECONDS);
    }
  }

  /** What a handler does: the two updates of {@link #deadlocking}, the second's 1213 swallowed. */
  private static void swallowADeadlock(SqlSession tx, AtomicReference<SQLException> swallowed) throws SQLException {
    StoreTests.execute(tx, "UPDATE locks SET n = n + 1 WHERE id = 1");
    try {
      StoreTests.execute(tx, "UPDATE locks SET n = n + 10 WHERE id = 2 /* handler-waits */");
    } catch (SQLException e) {
      swallowed.set(e); // a handler that catches and goes on
    }
  }

  private static long effects(String key) throws SQLException {
    return StoreTests.count(pool, "SELECT count(*) FROM effects WHERE k = '" + key + "'");
  }

  @Test
  void aSwallowedDeadlockFailsTheMessageAndCommitsNothing() throws Exception {
    IdempotencyKey key = new IdempotencyKey("swallow", "k-" + System.nanoTime(), KeySource.HEADER);
    byte[] fingerprint = MessageDigest.getInstance("SHA-256").digest("p".getBytes(StandardCharsets.UTF_8));
    AtomicReference<SQLException> swallowed = new AtomicReference<>();
    Throwable thrown = deadlocking(() -> store.inTransaction(tx -> {
      store.claim(tx, key, fingerprint);
      swallowADeadlock(tx, swallowed);
      StoreTests.execute(tx, "INSERT INTO effects VALUES ('" + key.value() + "')");
      store.confirmClaim(tx, key);
      return null;
    }));
    assertThat((Throwable) swallowed.get()).as("the handler's statement was the deadlock's victim").isNotNull();
    assertThat(swallowed.get().getErrorCode()).isEqualTo(Dialect.ER_LOCK_DEADLOCK);
    assertThat(thrown).isInstanceOf(IllegalStateException.class).hasMessageContaining("no longer held");
    assertThat(store.isProcessed(key)).isFalse();
    assertThat(effects(key.value())).isZero();
  }

  @Test
  void aBatchWhoseHandlerSwallowsADeadlockCommitsNothing() throws Exception {
    String run = "b" + System.nanoTime();
    List<IdempotencyKey> keys = List.of(new IdempotencyKey("swallow", run + "-1", KeySource.HEADER),
        new IdempotencyKey("swallow", run + "-2", KeySource.HEADER), new IdempotencyKey("swallow", run + "-3", KeySource.HEADER));
    byte[] fingerprint = MessageDigest.getInstance("SHA-256").digest("p".getBytes(StandardCharsets.UTF_8));
    AtomicReference<SQLException> swallowed = new AtomicReference<>();
    Throwable thrown = deadlocking(() -> store.inTransaction(tx -> {
      store.claimAll(tx, keys, List.of(fingerprint, fingerprint, fingerprint));
      swallowADeadlock(tx, swallowed);
      for (IdempotencyKey key : keys) {
        StoreTests.execute(tx, "INSERT INTO effects VALUES ('" + key.value() + "')");
      }
      store.confirmClaims(tx, keys);
      return null;
    }));
    assertThat((Throwable) swallowed.get()).as("the handler's statement was the deadlock's victim").isNotNull();
    assertThat(swallowed.get().getErrorCode()).isEqualTo(Dialect.ER_LOCK_DEADLOCK);
    assertThat(thrown).isInstanceOf(IllegalStateException.class).hasMessageContaining("no longer held");
    for (IdempotencyKey key : keys) {
      assertThat(store.isProcessed(key)).as(key.value()).isFalse();
      assertThat(effects(key.value())).as(key.value()).isZero();
    }
  }

  /**
   * Through the pipeline, with a batch handler and with per-message handlers: the batch whose
   * handler swallowed a deadlock is neither committed nor acked; the pipeline redoes it message by
   * message (the check runs with the COMMIT, so no message is to blame), where every message is
   * applied once.
   */
  @ParameterizedTest(name = "batch handler: {0}")
  @ValueSource(booleans = {true, false})
  void aBatchWhoseHandlerSwallowedADeadlockIsRedoneMessageByMessage(boolean batchHandler) throws Exception {
    String run = "p" + System.nanoTime();
    AtomicReference<SQLException> swallowed = new AtomicReference<>();
    AtomicInteger runs = new AtomicInteger();
    IdempotentConsumer.Builder<SqlSession> builder = IdempotentConsumer.builder(store).consumerGroup("swallow")
        .retryPolicy(RetryPolicy.builder().maxAttempts(3).initialBackoff(Duration.ofMillis(10))
            .maxBackoff(Duration.ofMillis(10)).build());
    if (batchHandler) {
      builder.batchHandler((messages, tx) -> {
        if (runs.getAndIncrement() == 0) {
          swallowADeadlock(tx, swallowed);
        }
        for (KeyedMessage each : messages) {
          StoreTests.execute(tx, "INSERT INTO effects VALUES ('" + each.key().value() + "')");
        }
      });
    } else {
      builder.handler((message, tx) -> {
        if (runs.getAndIncrement() == 0) {
          swallowADeadlock(tx, swallowed);
        }
        StoreTests.execute(tx, "INSERT INTO effects VALUES ('" + message.header("idempotency-key") + "')");
      });
    }
    IdempotentConsumer<SqlSession> pipeline = builder.build();
    List<InboundMessage> batch = List.of(StoreTests.message(run + "-1", "{}", 1),
        StoreTests.message(run + "-2", "{}", 1), StoreTests.message(run + "-3", "{}", 1));
    List<RecordedAcknowledgement> acks = List.of(new RecordedAcknowledgement(), new RecordedAcknowledgement(),
        new RecordedAcknowledgement());
    AtomicReference<List<ProcessingOutcome>> outcomes = new AtomicReference<>();
    Throwable thrown = deadlocking(() -> {
      outcomes.set(pipeline.processBatch(batch, List.copyOf(acks)));
      return null;
    });
    assertThat(thrown).isNull();
    assertThat((Throwable) swallowed.get()).as("the handler's statement was the deadlock's victim").isNotNull();
    assertThat(swallowed.get().getErrorCode()).isEqualTo(Dialect.ER_LOCK_DEADLOCK);
    assertThat(outcomes.get()).containsExactly(ProcessingOutcome.PROCESSED, ProcessingOutcome.PROCESSED,
        ProcessingOutcome.PROCESSED);
    assertThat(acks.stream().map(a -> a.calls).toList()).as("acked once each, after the redo")
        .containsExactly(List.of("ack"), List.of("ack"), List.of("ack"));
    // the batch's run wrote every effect after the deadlock, in the new transaction: none committed
    assertThat(runs.get()).as("the batch's run, then one run per message").isEqualTo(batchHandler ? 4 : 6);
    for (int i = 1; i <= 3; i++) {
      assertThat(effects(run + "-" + i)).as("effect of " + i).isEqualTo(1);
      assertThat(store.isProcessed(new IdempotencyKey("swallow", run + "-" + i, KeySource.HEADER))).isTrue();
    }
  }

  /**
   * A naturally idempotent pipeline writes no marker, and MariaDB's claim check counts markers:
   * refused when it is built (naming the option and the store), not failing every message.
   */
  @Test
  void aNaturallyIdempotentPipelineIsRefusedWhenItIsBuilt() {
    assertThat(store.confirmsWithoutMarkers()).isFalse();
    IdempotentConsumer.Builder<SqlSession> builder = IdempotentConsumer.builder(store).consumerGroup("natural")
        .naturallyIdempotent(true)
        .handler((message, tx) -> StoreTests.execute(tx, "INSERT INTO effects VALUES ('natural')"));
    assertThatThrownBy(builder::build)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("naturallyIdempotent(true)")
        .hasMessageContaining("dialect=MARIADB")
        .hasMessageContaining("PostgreSQL");
    assertThat(IdempotentConsumer.builder(store).consumerGroup("natural")
        .handler((message, tx) -> { }).build()).isNotNull();
  }

}
