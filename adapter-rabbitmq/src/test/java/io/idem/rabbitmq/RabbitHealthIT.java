package io.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.ConsumerHealth;
import io.idem.IdempotentConsumer;
import io.idem.RetryPolicy;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.api.Test;

/** {@link RabbitIdempotentConsumer#health()} for readiness probes, on the real broker. */
class RabbitHealthIT {
  private static final Duration BACKOFF = Duration.ofSeconds(20);

  @Test
  void healthShowsTheConnectionTheQueueTheLastDeliveryAndWhatIsHeldForRetry() throws Exception {
    try (TestQueue queue = TestQueue.declare("health", RabbitQueueType.QUORUM);
        TestDatabase db = TestDatabase.fresh("rabbit_health")) {
      IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(db.store)
          .consumerGroup("health")
          .retryPolicy(RetryPolicy.builder().maxAttempts(3).initialBackoff(BACKOFF).maxBackoff(BACKOFF)
              .jitter(0).build())
          .handler((message, session) -> {
            throw new IllegalStateException("fails, then waits for its backoff");
          })
          .build();
      RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(queue.config(), pipeline);
      ConsumerHealth before = consumer.health();
      assertThat(before.running()).isFalse();
      assertThat(before.isReady()).isFalse();

      consumer.start();
      ConsumerHealth idle = consumer.health();
      assertThat(idle.running()).isTrue();
      assertThat(idle.connected()).isTrue();
      assertThat(idle.consuming()).isEqualTo(List.of(queue.name));
      assertThat(idle.lastReceive()).isNull();
      assertThat(idle.heldForRetry()).isZero();
      assertThat(idle.isReady()).isTrue();

      Instant published = Instant.now();
      queue.publish("failing-1", "{}");
      await("held for its backoff").atMost(BACKOFF.dividedBy(2)).until(() -> consumer.health().heldForRetry() == 1);
      ConsumerHealth holding = consumer.health();
      assertThat(holding.lastReceive()).isNotNull().isAfterOrEqualTo(published.minusSeconds(1));
      assertThat(holding.store().isAvailable()).isTrue();
      assertThat(holding.isReady()).isTrue();

      consumer.close();
      ConsumerHealth closed = consumer.health();
      assertThat(closed.running()).isFalse();
      assertThat(closed.connected()).isFalse();
      assertThat(closed.consuming()).isEmpty();
      assertThat(closed.heldForRetry()).isZero();
      assertThat(closed.isReady()).isFalse();
    }
  }
}
