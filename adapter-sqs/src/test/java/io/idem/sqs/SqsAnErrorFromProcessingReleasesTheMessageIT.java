package io.idem.sqs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.ProcessingOutcome;
import io.idem.testkit.ErrorInjector;
import io.idem.testkit.OutcomeRecorder.Settled;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * An Error the pipeline does not catch — thrown by a listener's {@code afterCommit} (see
 * {@link ErrorInjector}): the effect is committed, the message not yet deleted — is the message's
 * failure: its heartbeat stops and it is released after the retry backoff (1 s here), long before
 * its 30 s visibility timeout, is skipped as a duplicate, and the consumer goes on. Only a
 * {@link VirtualMachineError} stops the consumer, leaving the message to reappear undeleted.
 */
class SqsAnErrorFromProcessingReleasesTheMessageIT extends SqsTestBase {
  private static final Duration VISIBILITY = Duration.ofSeconds(30);

  @Test
  void anErrorFromAListenerReleasesTheMessageAfterTheBackoffAndTheConsumerGoesOn() {
    SqsHarness queue = queue(false);
    SqsIdempotentConsumer consumer = start(queue.config().visibilityTimeout(VISIBILITY).build(),
        pipeline(recording(), retries(3), ErrorInjector.error("boom", 1)));

    publish(queue, "boom", "{}");
    await("released well before its visibility timeout and skipped as a duplicate, or the consumer died")
        .atMost(VISIBILITY.dividedBy(2))
        .until(() -> outcomes.count("boom", ProcessingOutcome.DUPLICATE) == 1 || !consumer.isRunning());
    assertThat(consumer.isRunning()).isTrue();
    await("deleted").atMost(TIMEOUT).until(() -> queue.pendingCount() == 0);
    assertThat(db.count("boom")).isEqualTo(1);
    assertThat(outcomes.settled()).filteredOn(s -> "boom".equals(s.key()))
        .containsExactly(new Settled("boom", ProcessingOutcome.DUPLICATE, 2));

    publish(queue, "after", "{}");
    await("the next message processed").atMost(TIMEOUT)
        .until(() -> db.count("after") == 1 && queue.pendingCount() == 0);
    assertThat(consumer.isRunning()).isTrue();
    assertThat(db.total()).isEqualTo(2);
  }

  @Test
  void aVirtualMachineErrorStopsTheConsumerAndTheMessageReappearsUndeleted() {
    SqsHarness queue = queue(false);
    SqsConsumerConfig config = queue.config().visibilityTimeout(Duration.ofSeconds(3)).build();
    SqsIdempotentConsumer consumer = start(config, pipeline(recording(), retries(3), ErrorInjector.vmError("fatal")));

    publish(queue, "fatal", "{}");
    await("consumer stopped").atMost(TIMEOUT).until(() -> !consumer.isRunning());
    assertThat(db.count("fatal")).isEqualTo(1); // committed in the database before the Error
    assertThat(queue.pendingCount()).isEqualTo(1);

    start(config, pipeline(recording(), retries(3)));
    await("delivered again and skipped as a duplicate").atMost(TIMEOUT)
        .until(() -> outcomes.count("fatal", ProcessingOutcome.DUPLICATE) == 1 && queue.pendingCount() == 0);
    assertThat(db.count("fatal")).isEqualTo(1);
  }
}
