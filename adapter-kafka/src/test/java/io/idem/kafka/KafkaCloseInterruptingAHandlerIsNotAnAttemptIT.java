package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Shutdown is not a failure: with {@code maxAttempts(2)}, a record that failed once (attempt 1)
 * and whose handler is blocked on attempt 2 when {@code close()} runs out of
 * {@code shutdownTimeout} and interrupts it is neither dead-lettered nor committed; its outcome
 * is {@code RELEASED}, the interrupt flag is set again, and the next consumer of the group
 * applies it, on an attempt that was not advanced by the shutdown.
 */
class KafkaCloseInterruptingAHandlerIsNotAnAttemptIT extends KafkaITSupport {

  @Override
  protected RetryPolicy retryPolicy() {
    return RetryPolicy.builder().maxAttempts(2).initialBackoff(Duration.ofMillis(100))
        .maxBackoff(Duration.ofMillis(100)).multiplier(1.0).jitter(0).build();
  }

  /** {@code concurrency} 2: the record is in flight on a worker, not on the consumer's thread. */
  @ParameterizedTest(name = "concurrency {0}")
  @ValueSource(ints = {1, 2})
  void anInterruptedLastAttemptIsHandedBackUncommittedAndAppliedByTheNextConsumer(int concurrency) throws Exception {
    publish(0, "blocked", "{}");
    List<Integer> attempts = new CopyOnWriteArrayList<>();
    CountDownLatch blocking = new CountDownLatch(1);
    CountDownLatch never = new CountDownLatch(1);
    AtomicBoolean flagAfterProcessing = new AtomicBoolean();
    KafkaIdempotentConsumer first = start(pipeline((message, session) -> {
      attempts.add(message.deliveryAttempt());
      TestEffects.record(session, keyOf(message), message.payload());
      if (attempts.size() == 1) {
        throw new IllegalStateException("attempt 1 fails");
      }
      blocking.countDown();
      never.await(); // interrupted by close()
    }, new IdempotencyListener() {
      @Override
      public void onOutcome(InboundMessage message, @Nullable IdempotencyKey key,
          ProcessingOutcome outcome, Duration elapsed) {
        if (outcome == ProcessingOutcome.RELEASED) {
          flagAfterProcessing.set(Thread.currentThread().isInterrupted());
        }
      }
    }), b -> b.shutdownTimeout(Duration.ofMillis(500)).concurrency(concurrency));
    assertThat(blocking.await(60, TimeUnit.SECONDS)).isTrue();

    first.close();

    assertThat(attempts).containsExactly(1, 2);
    assertThat(outcomes.count("blocked", ProcessingOutcome.RELEASED)).isEqualTo(1);
    assertThat(flagAfterProcessing).isTrue();
    assertThat(outcomes.count("blocked", ProcessingOutcome.DEAD_LETTERED)).isZero();
    assertThat(outcomes.deadLetters()).isEmpty();
    assertThat(effects.count("blocked")).isZero();
    assertThat(committed(0)).as("nothing past the record (0: the mark made at assignment)").isZero();

    List<Integer> nextAttempts = new CopyOnWriteArrayList<>();
    start((message, session) -> {
      nextAttempts.add(message.deliveryAttempt());
      TestEffects.record(session, keyOf(message), message.payload());
    }, b -> b);
    await("applied by the next consumer").atMost(TIMEOUT).until(() -> effects.count("blocked") == 1);
    awaitSettled();
    // Kafka counts no deliveries: the adapter does, per consumer, so the next one starts at 1
    assertThat(nextAttempts).containsExactly(1);
    assertThat(outcomes.count("blocked", ProcessingOutcome.PROCESSED)).isEqualTo(1);
    assertThat(outcomes.count("blocked", ProcessingOutcome.DEAD_LETTERED)).isZero();
    assertThat(KafkaTestClients.readAll(deadLetterTopic)).isEmpty();
  }
}
