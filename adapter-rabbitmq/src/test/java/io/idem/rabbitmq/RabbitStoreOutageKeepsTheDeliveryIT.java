package io.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.IdempotentConsumer;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.testkit.OutcomeRecorder;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.api.Test;

/**
 * A store outage does not return the delivery to the queue: on a quorum queue with
 * {@code x-delivery-limit} 2, an outage lasting many more retries than that neither raises
 * {@code x-delivery-count} nor lets RabbitMQ dead-letter the message; once the store is back it is
 * applied once, as attempt 1. Closing the consumer during the outage returns it to the queue.
 */
class RabbitStoreOutageKeepsTheDeliveryIT {
  private static final int DELIVERY_LIMIT = 2;
  private static final Duration BACKOFF = Duration.ofMillis(200);

  private static RetryPolicy twoAttempts() {
    return RetryPolicy.builder().maxAttempts(DELIVERY_LIMIT).initialBackoff(BACKOFF).maxBackoff(BACKOFF)
        .multiplier(1.0).jitter(0).build();
  }

  private static TestQueue quorumQueueWithLimit(String prefix) throws Exception {
    TestQueue queue = TestQueue.undeclared(prefix, RabbitQueueType.QUORUM);
    queue.channel().exchangeDeclare(queue.name + ".dlx", com.rabbitmq.client.BuiltinExchangeType.FANOUT, true);
    queue.channel().queueDeclare(queue.name + ".dlq", true, false, false,
        java.util.Map.of("x-queue-type", "quorum"));
    queue.channel().queueBind(queue.name + ".dlq", queue.name + ".dlx", "");
    queue.channel().queueDeclare(queue.name, true, false, false, config(queue).queueArguments());
    return queue;
  }

  private static RabbitConsumerConfig config(TestQueue queue) {
    return queue.configBuilder().deliveryLimit(DELIVERY_LIMIT).build();
  }

  @Test
  void outageLongerThanTheDeliveryLimitAppliesTheMessageOnceAndDeadLettersNothing() throws Exception {
    try (TestQueue queue = quorumQueueWithLimit("store-outage");
        TestDatabase db = TestDatabase.fresh("rabbit_outage")) {
      OutcomeRecorder outcomes = new OutcomeRecorder();
      List<Integer> handlerAttempts = new CopyOnWriteArrayList<>();
      IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(db.store)
          .consumerGroup("outage")
          .retryPolicy(twoAttempts())
          .listener(outcomes)
          .handler((message, session) -> {
            handlerAttempts.add(message.deliveryAttempt());
            TestDatabase.record(session, "held-1", message.deliveryAttempt());
          })
          .build();

      sql(db, "ALTER TABLE " + MyBatisProcessedEventStore.DEFAULT_TABLE + " RENAME TO idem_away");
      try (RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(config(queue), pipeline)) {
        consumer.start();
        queue.publish("held-1", "{}");
        await("store retries well past the delivery limit").atMost(Duration.ofSeconds(30))
            .until(() -> outcomes.count("held-1", ProcessingOutcome.RETRY_STORE_UNAVAILABLE) >= 3 * DELIVERY_LIMIT);
        assertThat(queue.deadLetters()).isEmpty();
        assertThat(queue.ready()).isZero(); // held unacked by the consumer, never returned
        assertThat(handlerAttempts).isEmpty();

        sql(db, "ALTER TABLE idem_away RENAME TO " + MyBatisProcessedEventStore.DEFAULT_TABLE);
        await("applied after the outage").atMost(Duration.ofSeconds(30)).until(() -> db.effects("held-1") == 1);
        assertThat(consumer.isRunning()).isTrue();
      }
      assertThat(handlerAttempts).containsExactly(1); // x-delivery-count never rose
      assertThat(outcomes.count("held-1", ProcessingOutcome.PROCESSED)).isEqualTo(1);
      assertThat(queue.deadLetters()).isEmpty();
      assertThat(queue.ready()).isZero();
    }
  }

  @Test
  void closingDuringTheOutageReturnsTheHeldDelivery() throws Exception {
    try (TestQueue queue = quorumQueueWithLimit("store-outage-close");
        TestDatabase db = TestDatabase.fresh("rabbit_outage")) {
      OutcomeRecorder outcomes = new OutcomeRecorder();
      IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(db.store)
          .consumerGroup("outage")
          .retryPolicy(RetryPolicy.builder().maxAttempts(DELIVERY_LIMIT).initialBackoff(Duration.ofSeconds(30))
              .maxBackoff(Duration.ofSeconds(30)).jitter(0).build())
          .listener(outcomes)
          .handler(TestDatabase.recordingHandler())
          .build();

      sql(db, "ALTER TABLE " + MyBatisProcessedEventStore.DEFAULT_TABLE + " RENAME TO idem_away");
      RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(config(queue), pipeline);
      consumer.start();
      queue.publish("held-2", "{}");
      await().atMost(Duration.ofSeconds(30)).until(() -> outcomes.count("held-2", ProcessingOutcome.RETRY_STORE_UNAVAILABLE) == 1);
      long start = System.nanoTime();
      consumer.close(); // the 30 s wait is not waited out
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(10));
      await("returned to the queue").atMost(Duration.ofSeconds(10)).until(() -> queue.ready() == 1);
      assertThat(queue.deadLetters()).isEmpty();
      assertThat(db.totalEffects()).isZero();
    }
  }

  private static void sql(TestDatabase db, String statement) throws Exception {
    try (Connection c = db.dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute(statement);
    }
  }
}
