package io.idem.jms;

import static io.idem.jms.JmsTestDatabase.unique;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.BrokerConsumer;
import io.idem.IdempotentConsumer;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.fixtures.ArtemisFixture.AddressPolicy;
import io.idem.fixtures.PostgresFixture;
import io.idem.jms.JmsTestDatabase.Effects;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.testkit.OutcomeRecorder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A store outage does not roll the message back: with the broker's {@code max-delivery-attempts}
 * at 2, an outage lasting many more retries neither raises {@code JMSXDeliveryCount} nor lets
 * Artemis move the message to the dead-letter queue; once the store is back it is applied once,
 * as delivery 1, in both session modes. {@code close()} cuts the wait short and gives the message
 * back.
 */
class JmsStoreOutageKeepsTheMessageInItsSessionIT {
  private static final Duration TIMEOUT = Duration.ofSeconds(30);
  private static final int BROKER_MAX_DELIVERY_ATTEMPTS = 2;

  private HikariDataSource dataSource;
  private MyBatisProcessedEventStore store;
  private JmsHarness harness;
  private BrokerConsumer consumer;

  @BeforeEach
  void freshSchema() {
    // its own schema: the test renames the processed-events table away
    dataSource = PostgresFixture.shared().newSchema("jms_outage");
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

  private JmsHarness harness(String prefix, JmsSessionMode mode) {
    String name = unique(prefix);
    // the broker's own dead letters go to the harness's dead-letter queue, where the test looks
    return new JmsHarness(name,
        AddressPolicy.deadLetterTo(name + ".dlq").withMaxDeliveryAttempts(BROKER_MAX_DELIVERY_ATTEMPTS),
        b -> b.concurrency(1).sessionMode(mode));
  }

  @ParameterizedTest
  @EnumSource(JmsSessionMode.class)
  void outageLongerThanMaxDeliveryAttemptsAppliesTheMessageOnceAndDeadLettersNothing(JmsSessionMode mode)
      throws Exception {
    harness = harness("store-outage", mode);
    Effects effects = new Effects(dataSource, unique("run"));
    OutcomeRecorder outcomes = new OutcomeRecorder();
    List<Integer> handlerAttempts = new CopyOnWriteArrayList<>();
    IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(store)
        .consumerGroup(unique("g"))
        .retryPolicy(RetryPolicy.builder().maxAttempts(2).initialBackoff(Duration.ofMillis(200))
            .maxBackoff(Duration.ofMillis(200)).multiplier(1.0).jitter(0).build())
        .listener(outcomes)
        .handler((message, session) -> {
          handlerAttempts.add(message.deliveryAttempt());
          effects.record(session, "held-1");
        })
        .build();

    sql("ALTER TABLE " + MyBatisProcessedEventStore.DEFAULT_TABLE + " RENAME TO idem_away");
    consumer = harness.newConsumer(pipeline);
    consumer.start();
    harness.publish(Map.of("idempotency-key", "held-1"), "{}".getBytes(StandardCharsets.UTF_8));
    await("store retries well past max-delivery-attempts").atMost(TIMEOUT)
        .until(() -> outcomes.count("held-1", ProcessingOutcome.RETRY_STORE_UNAVAILABLE) >= 3 * BROKER_MAX_DELIVERY_ATTEMPTS);
    assertThat(harness.deadLetters()).isEmpty();
    assertThat(outcomes.settled()).extracting(OutcomeRecorder.Settled::attempt).containsOnly(1);

    sql("ALTER TABLE idem_away RENAME TO " + MyBatisProcessedEventStore.DEFAULT_TABLE);
    await("applied after the outage").atMost(TIMEOUT).until(() -> effects.count("held-1") == 1);
    await().atMost(TIMEOUT).until(() -> harness.pendingCount() == 0);
    assertThat(handlerAttempts).containsExactly(1); // JMSXDeliveryCount never rose
    assertThat(outcomes.count("held-1", ProcessingOutcome.PROCESSED)).isEqualTo(1);
    assertThat(harness.deadLetters()).isEmpty();
    assertThat(consumer.isRunning()).isTrue();
  }

  @Test
  void closeCutsTheWaitShortAndGivesTheMessageBack() throws Exception {
    harness = harness("store-outage-close", JmsSessionMode.TRANSACTED);
    OutcomeRecorder outcomes = new OutcomeRecorder();
    IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(store)
        .consumerGroup(unique("g"))
        .retryPolicy(RetryPolicy.builder().initialBackoff(Duration.ofMinutes(5))
            .maxBackoff(Duration.ofMinutes(5)).jitter(0).build())
        .listener(outcomes)
        .handler((message, session) -> { })
        .build();
    sql("ALTER TABLE " + MyBatisProcessedEventStore.DEFAULT_TABLE + " RENAME TO idem_away");
    consumer = harness.newConsumer(pipeline);
    consumer.start();
    harness.publish(Map.of("idempotency-key", "held-2"), "{}".getBytes(StandardCharsets.UTF_8));
    await().atMost(TIMEOUT).until(() -> outcomes.count("held-2", ProcessingOutcome.RETRY_STORE_UNAVAILABLE) == 1);

    long start = System.nanoTime();
    consumer.close();
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
    assertThat(outcomes.count("held-2", ProcessingOutcome.RETRY_STORE_UNAVAILABLE)).isEqualTo(1);
    assertThat(harness.pendingCount()).isEqualTo(1);
    assertThat(harness.deadLetters()).isEmpty();
  }

  private void sql(String statement) throws Exception {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute(statement);
    }
  }
}
