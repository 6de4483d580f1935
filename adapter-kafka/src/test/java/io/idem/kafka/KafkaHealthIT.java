package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.ConsumerHealth;
import io.idem.RetryPolicy;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * {@code health()} reports what the consumer does: not ready before it joined, then connected
 * with its assigned partitions and the time of its last poll, a record held for a retry backoff
 * while its partition is paused, and not running after {@code close()}.
 */
class KafkaHealthIT extends KafkaITSupport {
  /** Long enough for the test to see the record held, short enough to keep the test quick. */
  private static final Duration BACKOFF = Duration.ofSeconds(2);

  @Override
  protected int partitions() {
    return 2;
  }

  @Override
  protected RetryPolicy retryPolicy() {
    return RetryPolicy.builder().maxAttempts(3).initialBackoff(BACKOFF).maxBackoff(BACKOFF)
        .multiplier(1.0).jitter(0).build();
  }

  @Test
  void healthFollowsAssignmentPollsAndHeldRecords() {
    AtomicInteger runs = new AtomicInteger();
    Instant before = Instant.now();
    KafkaIdempotentConsumer consumer = start((message, session) -> {
      TestEffects.record(session, keyOf(message), message.payload());
      if (keyOf(message).equals("fails-once") && runs.incrementAndGet() == 1) {
        throw new IllegalStateException("first attempt fails");
      }
    }, b -> b);

    await("ready with both partitions").atMost(TIMEOUT)
        .until(() -> consumer.health().isReady() && consumer.health().consuming().size() == 2);
    ConsumerHealth ready = consumer.health();
    assertThat(ready.running()).isTrue();
    assertThat(ready.consuming()).containsExactlyInAnyOrder(topic + "-0", topic + "-1");
    assertThat(ready.lastReceive()).isNotNull().isAfterOrEqualTo(before);
    assertThat(ready.heldForRetry()).isZero();
    assertThat(ready.store().isAvailable()).isTrue();

    publish(0, "fails-once", "{}");
    await("the failed record held for its backoff").atMost(TIMEOUT).pollInterval(Duration.ofMillis(50))
        .until(() -> consumer.health().heldForRetry() == 1);
    assertThat(consumer.health().isReady()).as("a held record does not make the consumer unready").isTrue();
    // the other partition goes on while partition 0 is paused
    publish(1, "other", "{}");
    await("the other partition applied").atMost(TIMEOUT).until(() -> effects.count("other") == 1);

    await("applied on its second attempt, nothing held").atMost(TIMEOUT)
        .until(() -> effects.count("fails-once") == 1 && consumer.health().heldForRetry() == 0);
    Instant lastPoll = consumer.health().lastReceive();
    await("polls go on").atMost(TIMEOUT).until(() -> consumer.health().lastReceive().isAfter(lastPoll));

    consumer.close();
    ConsumerHealth closed = consumer.health();
    assertThat(closed.running()).isFalse();
    assertThat(closed.connected()).isFalse();
    assertThat(closed.consuming()).isEmpty();
    assertThat(closed.isReady()).isFalse();
  }

  @Test
  void notReadyBeforeStart() {
    KafkaIdempotentConsumer consumer = KafkaIdempotentConsumer.create(
        KafkaConsumerConfig.builder(KafkaTestClients.bootstrap(), topic).build(), pipeline(recording()));
    assertThat(consumer.health().isReady()).isFalse();
    assertThat(consumer.health().lastReceive()).isNull();
  }
}
