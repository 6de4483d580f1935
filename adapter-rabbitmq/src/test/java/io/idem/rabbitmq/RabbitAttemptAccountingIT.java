package io.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Envelope;
import io.idem.DeadLetterCause;
import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.testkit.DeadLetteredMessage;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.ibatis.session.SqlSession;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * Attempt accounting on the real broker (issue 11, RabbitMQ): a handler failure always moves the
 * attempt, even when the broker's counter does not; a delivery held through a store outage is
 * handed back after {@code maxHold} and its hand-backs are not attempts.
 */
class RabbitAttemptAccountingIT {
  private static final Duration BACKOFF = Duration.ofMillis(200);

  private static RetryPolicy threeAttempts() {
    return RetryPolicy.builder().maxAttempts(3).initialBackoff(BACKOFF).maxBackoff(BACKOFF)
        .multiplier(1.0).jitter(0).build();
  }

  /**
   * A message whose {@code x-delivery-count} never moves — here set by its publisher on a classic
   * queue, which keeps no counter; on RabbitMQ 4.3+ the same happens to a quorum queue's count
   * when only nacks return it — is still dead-lettered after maxAttempts real runs, instead of
   * looping for ever as attempt 1.
   */
  @Test
  void aConstantDeliveryCountDoesNotMakeAFailingMessageLoopForEver() throws Exception {
    try (TestQueue queue = TestQueue.declare("constant-count", RabbitQueueType.CLASSIC);
        TestDatabase db = TestDatabase.fresh("rabbit_attempts")) {
      AMQP.BasicProperties props = new AMQP.BasicProperties.Builder().messageId("constant-1").deliveryMode(2)
          .headers(Map.of("idempotency-key", "constant-1", "x-delivery-count", 0L)).build();
      queue.channel().basicPublish("", queue.name, props, "{}".getBytes(StandardCharsets.UTF_8));
      queue.channel().waitForConfirmsOrDie(10_000);
      List<Integer> attempts = new CopyOnWriteArrayList<>();
      IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(db.store)
          .consumerGroup("attempts")
          .retryPolicy(threeAttempts())
          .handler((message, session) -> {
            attempts.add(message.deliveryAttempt());
            throw new IllegalStateException("always fails");
          })
          .build();

      try (RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(queue.config(), pipeline)) {
        consumer.start();
        await("dead letter").atMost(Duration.ofSeconds(30)).until(() -> !queue.deadLetters().isEmpty());
      }
      assertThat(attempts).containsExactly(1, 2, 3);
      DeadLetteredMessage letter = queue.deadLetters().get(0);
      assertThat(letter.cause()).isEqualTo(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED.name());
      assertThat(letter.detail()).contains("attempt 3 of 3", "always fails");
      assertThat(queue.ready()).isZero();
    }
  }

  /**
   * A store outage longer than {@code maxHold}: the held delivery is handed back to the queue
   * (redelivered, with a new delivery tag) every {@code maxHold}, so the broker's
   * {@code consumer_timeout} never closes the channel; on RabbitMQ 3.10 each hand-back raises the
   * quorum queue's {@code x-delivery-count}, yet none counts as an attempt: once the store is back
   * the message is applied once, as attempt 1.
   */
  @Test
  void aDeliveryHeldThroughAnOutageIsHandedBackAfterMaxHoldWithoutCostingAnAttempt() throws Exception {
    Duration maxHold = Duration.ofSeconds(1);
    try (TestQueue queue = TestQueue.declare("max-hold", RabbitQueueType.QUORUM);
        TestDatabase db = TestDatabase.fresh("rabbit_attempts")) {
      Set<Long> tags = ConcurrentHashMap.newKeySet();
      List<Long> deliveryCounts = new CopyOnWriteArrayList<>();
      List<Integer> handlerAttempts = new CopyOnWriteArrayList<>();
      IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(db.store)
          .consumerGroup("max-hold")
          .retryPolicy(threeAttempts())
          .listener(new IdempotencyListener() {
            @Override
            public void onOutcome(InboundMessage message, @Nullable IdempotencyKey key, ProcessingOutcome outcome,
                Duration elapsed) {
              if (outcome == ProcessingOutcome.RETRY_STORE_UNAVAILABLE) {
                tags.add(message.unwrap(Envelope.class).orElseThrow().getDeliveryTag());
                Object count = message.unwrap(AMQP.BasicProperties.class).orElseThrow().getHeaders()
                    .get("x-delivery-count");
                deliveryCounts.add(count instanceof Number n ? n.longValue() : 0L);
              }
            }
          })
          .handler((message, session) -> {
            handlerAttempts.add(message.deliveryAttempt());
            TestDatabase.record(session, "held-1", message.deliveryAttempt());
          })
          .build();

      sql(db, "ALTER TABLE " + MyBatisProcessedEventStore.DEFAULT_TABLE + " RENAME TO idem_away");
      RabbitConsumerConfig config = queue.configBuilder().maxHold(maxHold).build();
      try (RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(config, pipeline)) {
        consumer.start();
        queue.publish("held-1", "{}");
        // each hand-back is a new delivery (new tag): three of them take about 3 × maxHold
        await("handed back after maxHold, twice").atMost(maxHold.multipliedBy(20))
            .until(() -> tags.size() >= 3);
        assertThat(deliveryCounts).as("RabbitMQ 3.10 counted the hand-backs").contains(2L);
        assertThat(queue.deadLetters()).isEmpty();
        assertThat(handlerAttempts).isEmpty();

        sql(db, "ALTER TABLE idem_away RENAME TO " + MyBatisProcessedEventStore.DEFAULT_TABLE);
        await("applied after the outage").atMost(Duration.ofSeconds(30)).until(() -> db.effects("held-1") == 1);
      }
      assertThat(handlerAttempts).as("hand-backs are not attempts").containsExactly(1);
      assertThat(queue.deadLetters()).isEmpty();
      assertThat(queue.ready()).isZero();
    }
  }

  private static void sql(TestDatabase db, String statement) throws Exception {
    try (Connection c = db.dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute(statement);
    }
  }
}
