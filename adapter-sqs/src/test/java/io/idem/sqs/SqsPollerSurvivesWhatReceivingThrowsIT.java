package io.idem.sqs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.ProcessingOutcome;
import io.idem.testkit.OutcomeRecorder.Settled;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.Message;
import software.amazon.awssdk.services.sqs.model.MessageAttributeValue;
import software.amazon.awssdk.services.sqs.model.ReceiveMessageResponse;

/**
 * Something other than an {@code SdkException} thrown on the poller thread — here while a received
 * batch is read, after part of it was taken — is logged, what the batch took and did not start is
 * handed back at once (not kept hidden by the heartbeat), and polling goes on. A
 * {@link VirtualMachineError} there stops the consumer, and {@link SqsIdempotentConsumer#isRunning()}
 * says so.
 */
class SqsPollerSurvivesWhatReceivingThrowsIT extends SqsTestBase {
  private static final Duration VISIBILITY = Duration.ofSeconds(30);

  @Test
  void aFailureWhileReadingABatchHandsBackWhatItTookAndPollingGoesOn() {
    SqsHarness queue = queue(false);
    AtomicBoolean corrupted = new AtomicBoolean();
    SqsClient sqs = interceptedClient((method, args, real) -> {
      Object result = real.call();
      if (method.equals("receiveMessage") && result instanceof ReceiveMessageResponse response
          && !response.messages().isEmpty() && corrupted.compareAndSet(false, true)) {
        // behind the real messages one whose attribute has no value at all (the SDK's model keeps
        // the null): reading it throws a NullPointerException once the messages before it were taken
        Map<String, MessageAttributeValue> attributes = new HashMap<>();
        attributes.put("idempotency-key", null);
        List<Message> messages = new ArrayList<>(response.messages());
        messages.add(Message.builder().messageId("unreadable").receiptHandle("unreadable").body("{}")
            .messageAttributes(attributes).build());
        return response.toBuilder().messages(messages).build();
      }
      return result;
    });
    SqsIdempotentConsumer consumer =
        start(queue.config().visibilityTimeout(VISIBILITY).build(), pipeline(recording(), retries(3)), sqs);

    publish(queue, "taken", "{}");
    // what the poller thread throws is the consumer's business: judge by what happens to the message
    await("handed back and processed long before its visibility timeout").dontCatchUncaughtExceptions()
        .atMost(VISIBILITY.dividedBy(2))
        .until(() -> db.count("taken") == 1 && queue.pendingCount() == 0);
    assertThat(corrupted).isTrue();
    assertThat(consumer.isRunning()).isTrue();
    assertThat(outcomes.settled()).filteredOn(s -> "taken".equals(s.key()))
        // received again (ApproximateReceiveCount 2), but the hand-back after the poll error was no
        // handler run, so it is not counted (issue 11): the first run is attempt 1
        .containsExactly(new Settled("taken", ProcessingOutcome.PROCESSED, 1));

    publish(queue, "after", "{}");
    await("the next message processed").atMost(TIMEOUT)
        .until(() -> db.count("after") == 1 && queue.pendingCount() == 0);
    assertThat(consumer.isRunning()).isTrue();
  }

  @Test
  void aVirtualMachineErrorWhileReceivingStopsTheConsumer() {
    SqsHarness queue = queue(false);
    AtomicBoolean fatal = new AtomicBoolean();
    SqsClient sqs = interceptedClient((method, args, real) -> {
      if (method.equals("receiveMessage") && fatal.get()) {
        throw new ReceiveVmError();
      }
      return real.call();
    });
    SqsIdempotentConsumer consumer = start(queue.config().build(), pipeline(recording(), retries(3)), sqs);
    assertThat(consumer.isRunning()).isTrue();

    fatal.set(true);
    await("consumer stopped").dontCatchUncaughtExceptions().atMost(Duration.ofSeconds(10))
        .until(() -> !consumer.isRunning());
    publish(queue, "unseen", "{}");
    // two long-poll waits (SqsHarness.WAIT_TIME, the configured waitTime): a poller still alive
    // would have received "unseen" within the first; it must stay unapplied and on the queue
    await("nothing consumes after the stop").during(SqsHarness.WAIT_TIME.multipliedBy(2))
        .atMost(SqsHarness.WAIT_TIME.multipliedBy(2).plus(TIMEOUT))
        .until(() -> db.count("unseen") == 0 && queue.visibleCount() == 1);
  }

  /** Stands in for an {@code OutOfMemoryError} thrown by the client. */
  private static final class ReceiveVmError extends VirtualMachineError {
    private static final long serialVersionUID = 1L;

    ReceiveVmError() {
      super("injected in ReceiveMessage");
    }
  }
}
