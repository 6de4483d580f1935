package io.idem.jms;

import static io.idem.jms.JmsTestDatabase.attempts;
import static io.idem.jms.JmsTestDatabase.pipeline;
import static io.idem.jms.JmsTestDatabase.unique;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.BrokerConsumer;
import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import io.idem.jms.JmsTestDatabase.Effects;
import io.idem.testkit.OutcomeRecorder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Shutdown is not a failure: with {@code maxAttempts(2)}, a message that failed once (delivery 1)
 * and whose handler is blocked on delivery 2 when {@code close()} runs out of
 * {@code shutdownTimeout} is interrupted, not dead-lettered: its outcome is {@code RELEASED}, the
 * worker keeps the interrupt flag, rolls the session back on its own thread and stops, and the
 * next consumer applies the message.
 */
class JmsCloseInterruptingAHandlerIsNotAnAttemptIT {
  private static final Duration TIMEOUT = Duration.ofSeconds(30);
  private JmsHarness harness;

  @AfterEach
  void tearDown() {
    if (harness != null) {
      harness.close();
    }
  }

  @Test
  void anInterruptedLastAttemptGoesBackToTheBrokerAndIsAppliedByTheNextConsumer() throws Exception {
    harness = new JmsHarness(unique("close-interrupt"),
        b -> b.concurrency(1).shutdownTimeout(Duration.ofMillis(500)));
    harness.publish(Map.of("idempotency-key", "blocked"), "{}".getBytes(StandardCharsets.UTF_8));
    Effects effects = Effects.newRun();
    OutcomeRecorder outcomes = new OutcomeRecorder();
    List<Integer> seen = new CopyOnWriteArrayList<>();
    CountDownLatch blocking = new CountDownLatch(1);
    CountDownLatch never = new CountDownLatch(1);
    AtomicBoolean flagKept = new AtomicBoolean();
    String group = unique("g");
    BrokerConsumer consumer = harness.newConsumer(pipeline(group, (message, session) -> {
      seen.add(message.deliveryAttempt());
      effects.record(session, message.header("idempotency-key"));
      if (seen.size() == 1) {
        throw new IllegalStateException("attempt 1 fails");
      }
      blocking.countDown();
      never.await(); // interrupted by close()
    }, attempts(2), outcomes, new IdempotencyListener() {
      @Override
      public void onOutcome(InboundMessage message, @Nullable IdempotencyKey key,
          ProcessingOutcome outcome, Duration elapsed) {
        if (outcome == ProcessingOutcome.RELEASED) {
          flagKept.set(Thread.currentThread().isInterrupted());
        }
      }
    }));
    consumer.start();
    assertThat(blocking.await(20, TimeUnit.SECONDS)).isTrue();

    consumer.close();

    assertThat(seen).containsExactly(1, 2);
    assertThat(outcomes.count("blocked", ProcessingOutcome.RELEASED)).isEqualTo(1);
    assertThat(outcomes.count("blocked", ProcessingOutcome.DEAD_LETTERED)).isZero();
    assertThat(outcomes.deadLetters()).isEmpty();
    assertThat(flagKept).as("the interrupt flag is set again").isTrue();
    assertThat(effects.count("blocked")).isZero();
    await("back on the queue").atMost(TIMEOUT).until(() -> harness.pendingCount() == 1);
    assertThat(harness.deadLetters()).isEmpty();

    List<Integer> later = new CopyOnWriteArrayList<>();
    OutcomeRecorder next = new OutcomeRecorder();
    BrokerConsumer second = harness.newConsumer(pipeline(group, (message, session) -> {
      later.add(message.deliveryAttempt());
      effects.record(session, message.header("idempotency-key"));
    }, attempts(2), next));
    second.start();
    await("applied by the next consumer").atMost(TIMEOUT).until(() -> effects.count("blocked") == 1);
    second.close();
    assertThat(next.count("blocked", ProcessingOutcome.PROCESSED)).isEqualTo(1);
    assertThat(harness.deadLetters()).isEmpty();
    assertThat(harness.pendingCount()).isZero();
    // JMSXDeliveryCount counts every return, the shutdown's rollback too: the third delivery
    assertThat(later).containsExactly(3);
  }
}
