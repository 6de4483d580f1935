package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.NonRetryableException;
import io.idem.ProcessingOutcome;
import io.idem.testkit.ErrorInjector;
import io.idem.testkit.OutcomeRecorder.Settled;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * An Error from a listener's {@code onOutcome} (see {@link ErrorInjector#errorOnOutcome}) comes
 * after the acknowledgement settled the record: it is logged, and the record stays settled — its
 * offset is committed and it is not processed again (a dead-lettered record is not copied to the
 * dead-letter topic a second time).
 */
class AnErrorAfterTheRecordWasSettledDoesNotProcessItAgainIT extends KafkaITSupport {

  @Test
  void anErrorAfterTheAckCommitsTheRecordWithoutProcessingItAgain() {
    KafkaIdempotentConsumer consumer = start(pipeline(recording(), ErrorInjector.errorOnOutcome("acked", 1)), b -> b);

    publish(0, "acked", "{}");
    publish(0, "after", "{}");
    await("both records processed and committed").atMost(TIMEOUT)
        .until(() -> effects.count("after") == 1 && committed(0) == 2);
    assertThat(consumer.isRunning()).isTrue();
    assertThat(effects.count("acked")).isEqualTo(1);
    assertThat(outcomes.settled()).filteredOn(s -> "acked".equals(s.key()))
        .containsExactly(new Settled("acked", ProcessingOutcome.PROCESSED, 1));
  }

  @Test
  void anErrorAfterTheDeadLetterCopyDoesNotCopyTheRecordAgain() {
    AtomicInteger handled = new AtomicInteger();
    KafkaIdempotentConsumer consumer = start(pipeline((message, session) -> {
      if (keyOf(message).equals("poison")) {
        handled.incrementAndGet();
        throw new NonRetryableException("cannot apply poison");
      }
      TestEffects.record(session, keyOf(message), message.payload());
    }, ErrorInjector.errorOnOutcome("poison", 1)), b -> b);

    publish(0, "poison", "{}");
    publish(0, "after", "{}");
    await("both records settled and committed").atMost(TIMEOUT)
        .until(() -> effects.count("after") == 1 && committed(0) == 2);
    assertThat(consumer.isRunning()).isTrue();
    assertThat(handled).hasValue(1);
    assertThat(KafkaTestClients.readAll(deadLetterTopic)).hasSize(1);
    assertThat(outcomes.settled()).filteredOn(s -> "poison".equals(s.key()))
        .containsExactly(new Settled("poison", ProcessingOutcome.DEAD_LETTERED, 1));
  }
}
