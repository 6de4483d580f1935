package io.idem.jms;

import static io.idem.jms.JmsTestDatabase.attempts;
import static io.idem.jms.JmsTestDatabase.pipeline;
import static io.idem.jms.JmsTestDatabase.unique;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.BrokerConsumer;
import io.idem.ProcessingOutcome;
import io.idem.jms.JmsTestDatabase.Effects;
import io.idem.testkit.OutcomeRecorder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * close() lets the in-flight message finish and commit, and returns the rest unacknowledged
 * (per-message mode; in batch mode close() lets the batch in hand finish within shutdownTimeout).
 */
class JmsGracefulCloseIT {
  private static final Duration TIMEOUT = Duration.ofSeconds(30);
  private JmsHarness harness;

  @AfterEach
  void tearDown() {
    if (harness != null) {
      harness.close();
    }
  }

  @Test
  void closeFinishesTheInFlightMessageAndReturnsPrefetchedOnes() throws Exception {
    // per-message mode: in batch mode the three arrive in one batch, and close() lets it finish
    harness = new JmsHarness(unique("close"), b -> b.concurrency(1).maxBatchSize(1));
    for (int i = 0; i < 3; i++) {
      harness.publish(Map.of("idempotency-key", "m-" + i), ("{\"n\":" + i + "}").getBytes(StandardCharsets.UTF_8));
    }
    Effects effects = Effects.newRun();
    OutcomeRecorder outcomes = new OutcomeRecorder();
    CountDownLatch inFlight = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    String group = unique("g");
    BrokerConsumer consumer = harness.newConsumer(pipeline(group, (message, session) -> {
      effects.record(session, message.header("idempotency-key"));
      inFlight.countDown();
      assertThat(release.await(20, TimeUnit.SECONDS)).isTrue();
    }, attempts(3), outcomes));
    consumer.start();
    assertThat(inFlight.await(20, TimeUnit.SECONDS)).isTrue();

    CompletableFuture<Void> closing = CompletableFuture.runAsync(consumer::close);
    await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(2)).until(() -> !closing.isDone());
    release.countDown();
    closing.get(20, TimeUnit.SECONDS);

    assertThat(consumer.isRunning()).isFalse();
    assertThat(outcomes.count("m-0", ProcessingOutcome.PROCESSED)).isEqualTo(1);
    assertThat(outcomes.settled()).hasSize(1);
    assertThat(effects.count("m-0")).isEqualTo(1);
    await().atMost(TIMEOUT).until(() -> harness.pendingCount() == 2);

    List<Integer> laterAttempts = new CopyOnWriteArrayList<>();
    BrokerConsumer next = harness.newConsumer(pipeline(group,
        (message, session) -> {
          laterAttempts.add(message.deliveryAttempt());
          effects.record(session, message.header("idempotency-key"));
        }, attempts(3)));
    next.start();
    await().atMost(TIMEOUT).until(() -> effects.total() == 3);
    next.close();
    assertThat(harness.pendingCount()).isZero();
    assertThat(effects.doubled()).isZero();
    // Artemis does not count prefetched messages handed back by a closing session as deliveries
    assertThat(laterAttempts).containsExactly(1, 1);
  }
}
