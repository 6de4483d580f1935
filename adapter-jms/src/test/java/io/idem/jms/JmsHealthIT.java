package io.idem.jms;

import static io.idem.jms.JmsTestDatabase.pipeline;
import static io.idem.jms.JmsTestDatabase.unique;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.ConsumerHealth;
import io.idem.RetryPolicy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@link JmsIdempotentConsumer#health()}: connected, consuming, last receive, held for retry, store. */
class JmsHealthIT {
  private static final Duration TIMEOUT = Duration.ofSeconds(30);
  private static final Duration BACKOFF = Duration.ofSeconds(3);
  private JmsHarness harness;
  private JmsIdempotentConsumer consumer;

  @AfterEach
  void tearDown() {
    if (consumer != null) {
      consumer.close();
    }
    if (harness != null) {
      harness.close();
    }
  }

  @Test
  void healthShowsConnectionQueueLastReceiveAndAMessageHeldForItsBackoff() throws Exception {
    harness = new JmsHarness(unique("health"), b -> b.concurrency(2));
    AtomicInteger runs = new AtomicInteger();
    CountDownLatch failed = new CountDownLatch(1);
    consumer = (JmsIdempotentConsumer) harness.newConsumer(pipeline(unique("g"), (message, session) -> {
      if (runs.incrementAndGet() == 1) {
        failed.countDown();
        throw new IllegalStateException("first run fails");
      }
    }, RetryPolicy.builder().maxAttempts(3).initialBackoff(BACKOFF).maxBackoff(BACKOFF).jitter(0).build()));

    ConsumerHealth before = consumer.health();
    assertThat(before.running()).isFalse();
    assertThat(before.isReady()).isFalse();

    Instant started = Instant.now();
    consumer.start();
    await().atMost(TIMEOUT).until(() -> consumer.health().lastReceive() != null);
    ConsumerHealth idle = consumer.health();
    assertThat(idle.running()).isTrue();
    assertThat(idle.connected()).isTrue();
    assertThat(idle.consuming()).containsExactly(harness.queue);
    assertThat(idle.lastReceive()).isAfterOrEqualTo(started);
    assertThat(idle.heldForRetry()).isZero();
    assertThat(idle.store().isAvailable()).isTrue();
    assertThat(idle.isReady()).isTrue();

    harness.publish(Map.of("idempotency-key", "held"), "{}".getBytes(StandardCharsets.UTF_8));
    assertThat(failed.await(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isTrue();
    // the failed message is held in its worker's session for the 3 s backoff
    await().atMost(BACKOFF).until(() -> consumer.health().heldForRetry() == 1);
    assertThat(consumer.health().isReady()).isTrue(); // a held message is not a broken consumer
    await().atMost(TIMEOUT).until(() -> runs.get() == 2);
    await().atMost(TIMEOUT).until(() -> consumer.health().heldForRetry() == 0);

    consumer.close();
    ConsumerHealth closed = consumer.health();
    assertThat(closed.running()).isFalse();
    assertThat(closed.connected()).isFalse();
    assertThat(closed.consuming()).isEmpty();
    assertThat(closed.isReady()).isFalse();
  }
}
