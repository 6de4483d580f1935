package io.idem.jms;

import static io.idem.jms.JmsTestDatabase.pipeline;
import static io.idem.jms.JmsTestDatabase.unique;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.BrokerConsumer;
import io.idem.RetryPolicy;
import io.idem.jms.JmsTestDatabase.Effects;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@code holdForRetryBackoff}: the pipeline's backoff spaces redeliveries even with no broker
 * redelivery delay (the harness sets none), and close() cuts a hold short.
 */
class JmsRetryBackoffIT {
  private static final Duration TIMEOUT = Duration.ofSeconds(30);
  private JmsHarness harness;
  private BrokerConsumer consumer;

  @AfterEach
  void tearDown() {
    if (consumer != null) {
      consumer.close();
    }
    if (harness != null) {
      harness.close();
    }
  }

  private static RetryPolicy fixedBackoff(Duration backoff) {
    return RetryPolicy.builder().maxAttempts(3).initialBackoff(backoff).maxBackoff(backoff)
        .multiplier(1.0).jitter(0).build();
  }

  @Test
  void heldRetryComesBackNoSoonerThanThePipelinesBackoff() {
    Duration backoff = Duration.ofMillis(700);
    harness = new JmsHarness(unique("hold"), b -> b.holdForRetryBackoff(true));
    harness.publish(Map.of("idempotency-key", "flaky"), "{}".getBytes(StandardCharsets.UTF_8));
    Effects effects = Effects.newRun();
    List<Instant> seenAt = new CopyOnWriteArrayList<>();
    consumer = harness.newConsumer(pipeline(unique("g"), (message, session) -> {
      seenAt.add(message.receivedAt());
      effects.record(session, "flaky");
      if (message.deliveryAttempt() == 1) {
        throw new IllegalStateException("first attempt fails");
      }
    }, fixedBackoff(backoff)));
    consumer.start();

    await().atMost(TIMEOUT).until(() -> effects.count("flaky") == 1);
    assertThat(seenAt).hasSize(2);
    assertThat(Duration.between(seenAt.get(0), seenAt.get(1))).isGreaterThanOrEqualTo(backoff);
  }

  @Test
  void withTheDefaultsTheBackoffIsHonouredThoughTheBrokerHasNoRedeliveryDelay() {
    // issue 11: with Artemis' default redelivery-delay 0 five attempts used to burn in milliseconds
    RetryPolicy policy = RetryPolicy.builder().maxAttempts(5).initialBackoff(Duration.ofMillis(500))
        .maxBackoff(Duration.ofSeconds(10)).multiplier(2.0).jitter(0).build();
    harness = new JmsHarness(unique("hold-default"), b -> b.concurrency(1)); // no hold setting
    harness.publish(Map.of("idempotency-key", "twice"), "{}".getBytes(StandardCharsets.UTF_8));
    Effects effects = Effects.newRun();
    List<Long> runNanos = new CopyOnWriteArrayList<>();
    consumer = harness.newConsumer(pipeline(unique("g"), (message, session) -> {
      runNanos.add(System.nanoTime());
      effects.record(session, "twice");
      if (runNanos.size() <= 2) {
        throw new IllegalStateException("fails on run " + runNanos.size());
      }
    }, policy));
    consumer.start();

    await().atMost(TIMEOUT).until(() -> effects.count("twice") == 1);
    assertThat(runNanos).hasSize(3);
    assertThat(Duration.ofNanos(runNanos.get(1) - runNanos.get(0))).isGreaterThanOrEqualTo(policy.backoff(1));
    assertThat(Duration.ofNanos(runNanos.get(2) - runNanos.get(1))).isGreaterThanOrEqualTo(policy.backoff(2));
    assertThat(policy.backoff(2)).isEqualTo(Duration.ofSeconds(1));
  }

  @Test
  void closeCutsAHoldShortAndLeavesTheMessageForRedelivery() {
    harness = new JmsHarness(unique("hold-close"), b -> b.concurrency(1).holdForRetryBackoff(true));
    harness.publish(Map.of("idempotency-key", "held"), "{}".getBytes(StandardCharsets.UTF_8));
    List<Integer> attempts = new CopyOnWriteArrayList<>();
    consumer = harness.newConsumer(pipeline(unique("g"), (message, session) -> {
      attempts.add(message.deliveryAttempt());
      throw new IllegalStateException("fails");
    }, fixedBackoff(Duration.ofMinutes(5))));
    consumer.start();
    await().atMost(TIMEOUT).until(() -> attempts.size() == 1);

    long start = System.nanoTime();
    consumer.close();
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
    assertThat(attempts).containsExactly(1);
    await().atMost(TIMEOUT).until(() -> harness.pendingCount() == 1);
    assertThat(harness.deadLetters()).isEmpty();
  }
}
