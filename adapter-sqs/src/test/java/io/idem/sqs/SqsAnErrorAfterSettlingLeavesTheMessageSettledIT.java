package io.idem.sqs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.NonRetryableException;
import io.idem.ProcessingOutcome;
import io.idem.testkit.ErrorInjector;
import io.idem.testkit.OutcomeRecorder.Settled;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.sqs.SqsClient;

/**
 * An Error from a listener's {@code onOutcome} (see {@link ErrorInjector#errorOnOutcome}) comes
 * after the acknowledgement settled the message. With the default {@code deleteBatchWindow} the
 * delete is only queued then (and here the first {@code DeleteMessageBatch} is slow, as over a bad
 * network): the message must not be released to the retry backoff — its visibility is never
 * changed, it never becomes visible again, it is deleted once and not received again.
 */
class SqsAnErrorAfterSettlingLeavesTheMessageSettledIT extends SqsTestBase {
  private static final Duration VISIBILITY = Duration.ofSeconds(10);
  private static final Duration DELETE_LATENCY = Duration.ofSeconds(2);

  private final List<String> visibilityChanges = new CopyOnWriteArrayList<>();
  private final AtomicBoolean slowed = new AtomicBoolean();

  private SqsClient slowDeletes() {
    return interceptedClient((method, args, real) -> {
      if (method.startsWith("changeMessageVisibility")) {
        visibilityChanges.add(method);
      }
      if (method.startsWith("deleteMessage") && slowed.compareAndSet(false, true)) {
        Thread.sleep(DELETE_LATENCY.toMillis());
      }
      return real.call();
    });
  }

  @Test
  void anErrorAfterTheAckNeitherReleasesTheMessageNorDeliversItAgain() {
    SqsHarness queue = queue(false);
    SqsConsumerConfig config = queue.config().visibilityTimeout(VISIBILITY).build();
    assertThat(config.deleteBatchWindow()).isEqualTo(SqsConsumerConfig.DEFAULT_DELETE_BATCH_WINDOW);
    SqsIdempotentConsumer consumer =
        start(config, pipeline(recording(), retries(3), ErrorInjector.errorOnOutcome("acked", 1)), slowDeletes());

    publish(queue, "acked", "{}");
    assertThat(watchPastTheVisibilityTimeout(queue, () -> db.count("acked") == 1))
        .as("times the message was seen visible again").isZero();
    assertThat(queue.pendingCount()).isZero();
    assertThat(outcomes.settled()).filteredOn(s -> "acked".equals(s.key()))
        .containsExactly(new Settled("acked", ProcessingOutcome.PROCESSED, 1));
    assertThat(visibilityChanges).isEmpty();
    assertThat(consumer.deletedCount()).isEqualTo(1);
    assertThat(consumer.isRunning()).isTrue();
  }

  @Test
  void anErrorAfterTheDeadLetterCopyNeitherReleasesTheMessageNorCopiesItAgain() {
    SqsHarness queue = queue(false);
    SqsIdempotentConsumer consumer = start(queue.config().visibilityTimeout(VISIBILITY).build(),
        pipeline((message, session) -> {
          throw new NonRetryableException("cannot apply " + key(message));
        }, retries(3), ErrorInjector.errorOnOutcome("poison", 1)), slowDeletes());

    publish(queue, "poison", "{}");
    assertThat(watchPastTheVisibilityTimeout(queue, () -> outcomes.count("poison", ProcessingOutcome.DEAD_LETTERED) >= 1))
        .as("times the message was seen visible again").isZero();
    assertThat(queue.pendingCount()).isZero();
    assertThat(queue.deadLetters()).hasSize(1);
    assertThat(outcomes.settled()).filteredOn(s -> "poison".equals(s.key()))
        .containsExactly(new Settled("poison", ProcessingOutcome.DEAD_LETTERED, 1));
    assertThat(visibilityChanges).isEmpty();
    assertThat(consumer.isRunning()).isTrue();
  }

  /**
   * Waits for {@code settled}, then until a visibility timeout (plus a second) passed, sampling
   * how many messages of the queue are visible; returns the sum of the samples.
   */
  private long watchPastTheVisibilityTimeout(SqsHarness queue, Callable<Boolean> settled) {
    await("settled").atMost(TIMEOUT).pollInterval(Duration.ofMillis(20)).until(settled);
    AtomicLong seenVisible = new AtomicLong();
    long until = System.nanoTime() + VISIBILITY.plusSeconds(1).toNanos();
    await("past the visibility timeout").atMost(TIMEOUT).pollInterval(Duration.ofMillis(100)).until(() -> {
      seenVisible.addAndGet(queue.visibleCount());
      return System.nanoTime() - until >= 0;
    });
    return seenVisible.get();
  }
}
