package io.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import io.idem.IdempotencyKey;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.KeySource;
import io.idem.NonRetryableException;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.spi.DeadLetterDecision;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The dead-letter decision in the store (docs/FAILURES.md, "Dead-lettering twice"): recorded
 * before the copy, a redelivery of the same delivery is dead-lettered again with the recorded
 * reason and never handled, a replay (another broker id) is processed anew, keyless messages
 * record nothing.
 */
class DeadLetterDecisionPipelineTest {
  private static final IdempotencyKey KEY = new IdempotencyKey("billing", "o-1", KeySource.HEADER);
  private final InMemoryProcessedEventStore store = new InMemoryProcessedEventStore();
  private final AtomicInteger handled = new AtomicInteger();
  private final List<String> effects = new ArrayList<>();

  private IdempotentConsumer<InMemoryTransaction> failing() {
    return IdempotentConsumer.builder(store).consumerGroup("billing")
        .retryPolicy(RetryPolicy.builder().maxAttempts(3).initialBackoff(Duration.ofMillis(10)).build())
        .handler((m, tx) -> {
          handled.incrementAndGet();
          throw new NonRetryableException("amount must be positive");
        }).build();
  }

  private IdempotentConsumer<InMemoryTransaction> working() {
    return IdempotentConsumer.builder(store).consumerGroup("billing")
        .handler((m, tx) -> {
          handled.incrementAndGet();
          tx.onCommit(() -> effects.add(m.header("idempotency-key")));
        }).build();
  }

  private static InboundMessage message(String key, String brokerId, int attempt) {
    InboundMessage.Builder b = InboundMessage.builder("orders", "{}".getBytes(StandardCharsets.UTF_8))
        .deliveryAttempt(attempt).brokerMessageId(brokerId);
    if (key != null) {
      b.header("idempotency-key", key);
    }
    return b.build();
  }

  @Test
  void theDecisionIsCommittedBeforeTheCopyIsStored() {
    List<DeadLetterDecision> seenAtCopy = new ArrayList<>();
    RecordingAcknowledgement ack = new RecordingAcknowledgement() {
      @Override
      public void deadLetter(DeadLetterReason reason) {
        seenAtCopy.add(store.deadLetterDecision(KEY));
        super.deadLetter(reason);
      }
    };
    assertThat(failing().process(message("o-1", "orders-0@7", 1), ack)).isEqualTo(ProcessingOutcome.DEAD_LETTERED);
    assertThat(seenAtCopy).hasSize(1);
    assertThat(seenAtCopy.get(0)).isNotNull();
    assertThat(seenAtCopy.get(0).cause()).isEqualTo(DeadLetterCause.NON_RETRYABLE);
    assertThat(seenAtCopy.get(0).brokerMessageId()).isEqualTo("orders-0@7");
    assertThat(store.isProcessed(KEY)).isFalse();
  }

  @Test
  void theSameDeliveryComingBackIsDeadLetteredAgainWithoutTheHandler() {
    RecordingAcknowledgement first = new RecordingAcknowledgement();
    failing().process(message("o-1", "orders-0@7", 1), first);
    assertThat(handled).hasValue(1);

    // the process died after the copy and before the offset commit: the next owner, attempt 1 again
    RecordingAcknowledgement again = new RecordingAcknowledgement();
    assertThat(working().process(message("o-1", "orders-0@7", 1), again))
        .isEqualTo(ProcessingOutcome.DEAD_LETTERED);
    assertThat(handled).as("never handled again, not even by a handler that would succeed").hasValue(1);
    assertThat(effects).isEmpty();
    assertThat(again.calls).containsExactly("deadLetter");
    assertThat(again.reason.cause()).isEqualTo(DeadLetterCause.NON_RETRYABLE);
    assertThat(again.reason.detail()).isEqualTo(first.reason.detail());
    assertThat(again.reason.exceptionClass()).isEqualTo(first.reason.exceptionClass());
    assertThat(again.reason.key()).isEqualTo("o-1");
  }

  @Test
  void aCopyTheDestinationRefusedIsStoredOnTheRedeliveryWithoutTheHandler() {
    RecordingAcknowledgement refused = new RecordingAcknowledgement();
    refused.failDeadLetter = 1;
    IdempotentConsumer<InMemoryTransaction> consumer = failing();
    try {
      consumer.process(message("o-1", "orders-0@7", 3), refused);
    } catch (IllegalStateException expected) {
      // the delivery stays unsettled, as before
    }
    RecordingAcknowledgement again = new RecordingAcknowledgement();
    assertThat(consumer.process(message("o-1", "orders-0@7", 4), again)).isEqualTo(ProcessingOutcome.DEAD_LETTERED);
    assertThat(handled).hasValue(1);
    assertThat(again.reason).isNotNull();
  }

  @Test
  void theSameDeliveryComingBackInABatchIsDeadLetteredWithoutTheHandler() {
    failing().process(message("o-1", "orders-0@7", 1), new RecordingAcknowledgement());
    RecordingAcknowledgement dead = new RecordingAcknowledgement();
    RecordingAcknowledgement fresh = new RecordingAcknowledgement();
    List<ProcessingOutcome> outcomes = working().processBatch(
        List.of(message("o-1", "orders-0@7", 1), message("o-2", "orders-0@8", 1)),
        List.of(dead, fresh));
    assertThat(outcomes).containsExactly(ProcessingOutcome.DEAD_LETTERED, ProcessingOutcome.PROCESSED);
    assertThat(dead.calls).containsExactly("deadLetter");
    assertThat(effects).containsExactly("o-2");
  }

  @Test
  void aReplayFromTheDeadLetterDestinationIsProcessedAnew() {
    failing().process(message("o-1", "orders-0@7", 1), new RecordingAcknowledgement());
    RecordingAcknowledgement replay = new RecordingAcknowledgement();
    assertThat(working().process(message("o-1", "orders-0@99", 1), replay)).isEqualTo(ProcessingOutcome.PROCESSED);
    assertThat(replay.calls).containsExactly("ack");
    assertThat(effects).containsExactly("o-1");
    assertThat(store.isProcessed(KEY)).isTrue();
    assertThat(store.deadLetterDecision(KEY)).isNull();
  }

  @Test
  void keylessDeadLettersRecordNothing() {
    RecordingAcknowledgement ack = new RecordingAcknowledgement();
    assertThat(failing().process(message(null, "orders-0@7", 1), ack)).isEqualTo(ProcessingOutcome.DEAD_LETTERED);
    assertThat(ack.reason.cause()).isEqualTo(DeadLetterCause.NO_KEY);
    assertThat(store.size()).isZero();
  }
}
