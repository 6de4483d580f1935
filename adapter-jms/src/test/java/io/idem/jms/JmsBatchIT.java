package io.idem.jms;

import static io.idem.jms.JmsTestDatabase.unique;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.BrokerConsumer;
import io.idem.DeadLetterCause;
import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.KeyedMessage;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.fixtures.ArtemisFixture.AddressPolicy;
import io.idem.fixtures.PostgresFixture;
import io.idem.jms.JmsTestDatabase.Effects;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.testkit.DeadLetteredMessage;
import io.idem.testkit.OutcomeRecorder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Batch mode ({@link JmsConsumerConfig#maxBatchSize()}) on embedded Artemis and PostgreSQL: one
 * session holds the batch; a failing message is retried inside the session (no rollback, so the
 * applied ones are committed once with it and nothing gains a delivery); a store outage during a
 * batch is not an attempt.
 */
class JmsBatchIT {
  private static final Duration TIMEOUT = Duration.ofSeconds(30);
  private static final int BATCH = 10;
  private static final int MAX_ATTEMPTS = 3;
  private static final Duration BACKOFF = Duration.ofMillis(200);

  private HikariDataSource dataSource;
  private MyBatisProcessedEventStore store;
  private JmsHarness harness;
  private BrokerConsumer consumer;

  @BeforeEach
  void freshSchema() {
    // its own schema: one test renames the processed-events table away
    dataSource = PostgresFixture.shared().newSchema("jms_batch");
    store = MyBatisProcessedEventStore.builder(JmsTestDatabase.sessions(dataSource))
        .createTableIfMissing(true).build();
  }

  @AfterEach
  void tearDown() {
    if (consumer != null) {
      consumer.close();
    }
    if (harness != null) {
      harness.close();
    }
    dataSource.close();
  }

  /** The broker's max-delivery-attempts at maxAttempts: one extra rollback would be visible. */
  private JmsHarness harness(String prefix, JmsSessionMode mode, int brokerLimit) {
    String name = unique(prefix);
    return new JmsHarness(name, AddressPolicy.deadLetterTo(name + ".dlq").withMaxDeliveryAttempts(brokerLimit),
        b -> b.concurrency(1).sessionMode(mode).maxBatchSize(BATCH));
  }

  private static RetryPolicy retries(int attempts) {
    return RetryPolicy.builder().maxAttempts(attempts).initialBackoff(BACKOFF).maxBackoff(BACKOFF)
        .multiplier(1.0).jitter(0).build();
  }

  /**
   * Makes the next batch exactly the given keys: a gate message whose handler waits until they
   * were published (persistent sends, on the broker when they return), so the worker's {@code
   * receive} and {@code receiveNoWait}s after the gate find all of them.
   */
  static final class Gate {
    final CountDownLatch open = new CountDownLatch(1);
    final CountDownLatch entered = new CountDownLatch(1);

    void pass(InboundMessage message) throws InterruptedException {
      if ("gate".equals(message.header("idempotency-key"))) {
        entered.countDown();
        if (!open.await(30, TimeUnit.SECONDS)) {
          throw new IllegalStateException("the gate was never opened");
        }
      }
    }

    void batchBehind(JmsHarness harness, List<String> keys) throws InterruptedException {
      publish(harness, "gate");
      assertThat(entered.await(30, TimeUnit.SECONDS)).as("gate reached").isTrue();
      keys.forEach(key -> publish(harness, key));
      open.countDown();
    }
  }

  private static void publish(JmsHarness harness, String key) {
    harness.publish(Map.of("idempotency-key", key), "{}".getBytes(StandardCharsets.UTF_8));
  }

  private static List<String> keys(String prefix, int n) {
    List<String> keys = new ArrayList<>();
    for (int i = 1; i <= n; i++) {
      keys.add(prefix + i);
    }
    return keys;
  }

  @ParameterizedTest
  @EnumSource(JmsSessionMode.class)
  void anAlwaysFailingMessageIsRetriedInItsSessionAndDeadLetteredWhileItsBatchIsAppliedOnce(JmsSessionMode mode)
      throws Exception {
    harness = harness("batch-poison", mode, MAX_ATTEMPTS);
    Effects effects = new Effects(dataSource, unique("run"));
    Gate gate = new Gate();
    Map<String, List<Long>> transactions = new ConcurrentHashMap<>();
    List<Integer> poisonRuns = new CopyOnWriteArrayList<>();
    OutcomeRecorder outcomes = new OutcomeRecorder();
    IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(store)
        .consumerGroup(unique("batch"))
        .retryPolicy(retries(MAX_ATTEMPTS))
        .listener(outcomes)
        .handler((message, session) -> {
          gate.pass(message);
          String key = String.valueOf(message.header("idempotency-key"));
          transactions.computeIfAbsent(key, k -> new CopyOnWriteArrayList<>()).add(transactionId(session));
          if (key.equals("j-5")) {
            poisonRuns.add(message.deliveryAttempt());
            throw new IllegalStateException("j-5 always fails");
          }
          effects.record(session, key);
        })
        .build();
    consumer = harness.newConsumer(pipeline);
    consumer.start();
    gate.batchBehind(harness, keys("j-", BATCH));
    await("j-5 dead-lettered").atMost(TIMEOUT).until(() -> !harness.deadLetters().isEmpty());
    await("the others applied").atMost(TIMEOUT).until(() -> effects.total() == BATCH);
    await("the session settled").atMost(TIMEOUT).until(() -> harness.pendingCount() == 0);
    consumer.close();

    // precondition: j-1..j-5 ran in one transaction (the batch: the handler stops at j-5's throw)
    long batch = transactions.get("j-1").get(0);
    assertThat(List.of(transactions.get("j-4").get(0), transactions.get("j-5").get(0))).containsOnly(batch);
    for (int i = 1; i <= BATCH; i++) {
      if (i != 5) {
        assertThat(effects.count("j-" + i)).as("effects of j-" + i).isEqualTo(1);
        assertThat(outcomes.count("j-" + i, ProcessingOutcome.PROCESSED)).isEqualTo(1);
        assertThat(outcomes.count("j-" + i, ProcessingOutcome.DUPLICATE)).isZero(); // never redelivered
      }
    }
    // in the batch (attempt 1: settled at once, not run again in the redo), then attempts 2 and 3
    // in the same session: the broker's max-delivery-attempts (3) never moved it, although it
    // equals maxAttempts
    assertThat(poisonRuns).containsExactly(1, 2, 3);
    List<DeadLetteredMessage> letters = harness.deadLetters();
    assertThat(letters).hasSize(1);
    assertThat(letters.get(0).cause()).isEqualTo(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED.name());
    assertThat(letters.get(0).detail()).contains("attempt 3 of 3", "j-5 always fails");
    assertThat(effects.count("j-5")).isZero();
  }

  @Test
  void aBatchHandlerWritesTheNewMessagesOfABatchWithOneStatement() throws Exception {
    harness = harness("batch-handler", JmsSessionMode.TRANSACTED, 10);
    Effects effects = new Effects(dataSource, unique("run"));
    Gate gate = new Gate();
    List<List<String>> calls = new CopyOnWriteArrayList<>();
    IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(store)
        .consumerGroup(unique("batch-handler"))
        .batchHandler((messages, session) -> {
          gate.pass(messages.get(0).message());
          calls.add(messages.stream().map(m -> m.key().value()).toList());
          insertAll(session, effects.run, messages);
        })
        .build();
    List<String> batch = keys("h-", BATCH - 3);
    batch.addAll(List.of("h-1", "h-2", "h-3")); // the same keys again in the same batch
    consumer = harness.newConsumer(pipeline);
    consumer.start();
    gate.batchBehind(harness, batch);
    await("all applied").atMost(TIMEOUT).until(() -> effects.total() == 1 + BATCH - 3);
    await("the duplicates acked").atMost(TIMEOUT).until(() -> harness.pendingCount() == 0);
    consumer.close();
    assertThat(calls).containsExactly(List.of("gate"), keys("h-", BATCH - 3));
    assertThat(effects.doubled()).isZero();
    assertThat(harness.deadLetters()).isEmpty();
  }

  @Test
  void aStoreOutageDuringABatchIsNotAnAttemptAndRollsNothingBack() throws Exception {
    int brokerLimit = 2;
    harness = harness("batch-outage", JmsSessionMode.TRANSACTED, brokerLimit);
    Effects effects = new Effects(dataSource, unique("run"));
    Gate gate = new Gate();
    OutcomeRecorder outcomes = new OutcomeRecorder();
    List<Integer> attempts = new CopyOnWriteArrayList<>();
    IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(store)
        .consumerGroup(unique("batch-outage"))
        .retryPolicy(retries(brokerLimit))
        .listener(outcomes)
        .listener(new IdempotencyListener() {
          @Override
          public void afterCommit(InboundMessage message, IdempotencyKey key, ProcessingOutcome pending) {
            if (key.value().equals("gate")) {
              sqlUnchecked("ALTER TABLE " + MyBatisProcessedEventStore.DEFAULT_TABLE + " RENAME TO idem_away");
            }
          }
        })
        .handler((message, session) -> {
          gate.pass(message);
          attempts.add(message.deliveryAttempt());
          effects.record(session, String.valueOf(message.header("idempotency-key")));
        })
        .build();
    consumer = harness.newConsumer(pipeline);
    consumer.start();
    gate.batchBehind(harness, keys("o-", BATCH)); // the store goes once the gate committed
    // one worker: the batch is ORDERED, so the head's retry outcome holds up the rest (not started)
    await("store retries past the broker's limit").atMost(TIMEOUT)
        .until(() -> outcomes.count("o-1", ProcessingOutcome.RETRY_STORE_UNAVAILABLE) > 2 * brokerLimit);
    assertThat(attempts).containsExactly(1); // the gate's
    assertThat(harness.deadLetters()).isEmpty();
    sql("ALTER TABLE idem_away RENAME TO " + MyBatisProcessedEventStore.DEFAULT_TABLE);
    await("applied after the outage").atMost(TIMEOUT).until(() -> effects.total() == 1 + BATCH);
    await("the session settled").atMost(TIMEOUT).until(() -> harness.pendingCount() == 0);
    consumer.close();
    assertThat(attempts).hasSize(1 + BATCH).containsOnly(1); // JMSXDeliveryCount never rose
    assertThat(outcomes.count(ProcessingOutcome.PROCESSED)).isEqualTo(1 + BATCH);
    assertThat(harness.deadLetters()).isEmpty();
  }

  private static long transactionId(SqlSession session) throws Exception {
    try (Statement s = session.getConnection().createStatement();
        ResultSet rs = s.executeQuery("SELECT txid_current()")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static void insertAll(SqlSession session, String run, List<KeyedMessage> messages) throws Exception {
    StringBuilder sql = new StringBuilder("INSERT INTO jms_effects (run_id, idem_key) VALUES ");
    for (int i = 0; i < messages.size(); i++) {
      sql.append(i == 0 ? "(?, ?)" : ", (?, ?)");
    }
    try (PreparedStatement ps = session.getConnection().prepareStatement(sql.toString())) {
      int p = 1;
      for (KeyedMessage m : messages) {
        ps.setString(p++, run);
        ps.setString(p++, m.key().value());
      }
      ps.executeUpdate();
    }
  }

  private void sqlUnchecked(String statement) {
    try {
      sql(statement);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  private void sql(String statement) throws Exception {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute(statement);
    }
  }
}
