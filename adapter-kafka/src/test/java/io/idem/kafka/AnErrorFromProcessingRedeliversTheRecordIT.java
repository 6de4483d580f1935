package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.ProcessingOutcome;
import io.idem.testkit.ErrorInjector;
import io.idem.testkit.OutcomeRecorder.Settled;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.junit.jupiter.api.Test;

/**
 * An Error the pipeline does not catch — thrown by a listener's {@code afterCommit} (see
 * {@link ErrorInjector}): the effect is committed, the offset not yet settled — is the record's
 * failure: the record comes back, is skipped as a duplicate, and the consumer goes on. Only a
 * {@link VirtualMachineError} stops the consumer, without committing the record in hand.
 */
class AnErrorFromProcessingRedeliversTheRecordIT extends KafkaITSupport {

  @Test
  void anErrorFromAListenerRedeliversTheRecordAndTheConsumerGoesOn() {
    KafkaIdempotentConsumer consumer = start(pipeline(recording(), ErrorInjector.error("boom", 1)), b -> b);

    publish(0, "boom", "{}");
    await("redelivered and skipped as a duplicate, or the consumer died").atMost(TIMEOUT)
        .until(() -> outcomes.count("boom", ProcessingOutcome.DUPLICATE) == 1 || !consumer.isRunning());
    assertThat(consumer.isRunning()).isTrue();
    await("offset committed").atMost(TIMEOUT).until(() -> committed(0) == 1);
    assertThat(effects.count("boom")).isEqualTo(1);
    assertThat(outcomes.settled()).filteredOn(s -> "boom".equals(s.key()))
        .containsExactly(new Settled("boom", ProcessingOutcome.DUPLICATE, 2));

    publish(0, "after", "{}");
    await("the next record processed").atMost(TIMEOUT).until(() -> effects.count("after") == 1 && committed(0) == 2);
    assertThat(consumer.isRunning()).isTrue();
    assertThat(effects.total()).isEqualTo(2);
  }

  @Test
  void aVirtualMachineErrorStopsTheConsumerWithoutCommittingTheRecordInHand() throws Exception {
    // the dead-letter producer's close hangs until released: isRunning() must not wait for it
    CountDownLatch producerClose = new CountDownLatch(1);
    KafkaIdempotentConsumer consumer = start(pipeline(recording(), ErrorInjector.vmError("fatal")), b -> b,
        props -> new KafkaProducer<byte[], byte[]>(props) {
          @Override
          public void close(Duration timeout) {
            try {
              producerClose.await(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
            super.close(timeout);
          }
        });
    publish(0, "first", "{}");
    await("first record committed").atMost(TIMEOUT).until(() -> committed(0) == 1);

    publish(0, "fatal", "{}");
    try {
      await("isRunning() false while the clients are still being closed").atMost(Duration.ofSeconds(15))
          .until(() -> !consumer.isRunning());
    } finally {
      producerClose.countDown();
    }
    assertThat(committed(0)).isEqualTo(1);
    assertThat(effects.count("fatal")).isEqualTo(1); // committed in the database before the Error

    start(pipeline(recording()), b -> b);
    await("the next owner gets the record").atMost(TIMEOUT)
        .until(() -> outcomes.count("fatal", ProcessingOutcome.DUPLICATE) == 1 && committed(0) == 2);
    assertThat(effects.count("fatal")).isEqualTo(1);
  }
}
