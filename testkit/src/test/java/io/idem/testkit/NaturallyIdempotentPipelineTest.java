package io.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.idem.IdempotencyKey;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.KeySource;
import io.idem.MessageHandler;
import io.idem.ProcessingOutcome;
import io.idem.spi.Acknowledgement;
import io.idem.spi.ForwardingProcessedEventStore;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@code IdempotentConsumer.Builder#naturallyIdempotent(true)}: no marker, every delivery handled. */
class NaturallyIdempotentPipelineTest {
  private final InMemoryProcessedEventStore store = new InMemoryProcessedEventStore();
  private final List<String> handled = new ArrayList<>();
  private final MessageHandler<InMemoryTransaction> recording =
      (m, tx) -> tx.onCommit(() -> handled.add(m.header("idempotency-key")));

  private IdempotentConsumer<InMemoryTransaction> pipeline(boolean natural) {
    return IdempotentConsumer.builder(store).consumerGroup("state").handler(recording)
        .naturallyIdempotent(natural).build();
  }

  private static InboundMessage message(String key) {
    InboundMessage.Builder b = InboundMessage.builder("orders", "{}".getBytes(StandardCharsets.UTF_8));
    if (key != null) {
      b.header("idempotency-key", key);
    }
    return b.build();
  }

  @Test
  void aRepeatedKeyIsHandledAgainAndNoMarkerIsWritten() {
    IdempotentConsumer<InMemoryTransaction> consumer = pipeline(true);
    RecordingAcknowledgement first = new RecordingAcknowledgement();
    RecordingAcknowledgement second = new RecordingAcknowledgement();

    assertThat(consumer.process(message("o-1"), first)).isEqualTo(ProcessingOutcome.PROCESSED);
    assertThat(consumer.process(message("o-1"), second)).isEqualTo(ProcessingOutcome.PROCESSED);

    assertThat(first.calls).containsExactly("ack");
    assertThat(second.calls).containsExactly("ack");
    assertThat(handled).containsExactly("o-1", "o-1");
    assertThat(store.isProcessed(new IdempotencyKey("state", "o-1", KeySource.HEADER))).isFalse();
  }

  @Test
  void theDefaultKeepsTheMarker() {
    IdempotentConsumer<InMemoryTransaction> consumer = pipeline(false);
    consumer.process(message("o-1"), new RecordingAcknowledgement());
    assertThat(consumer.process(message("o-1"), new RecordingAcknowledgement()))
        .isEqualTo(ProcessingOutcome.DUPLICATE);
    assertThat(handled).containsExactly("o-1");
  }

  @Test
  void aBatchHandlesEveryCopyWithoutClaiming() {
    List<InboundMessage> batch = List.of(message("o-1"), message("o-2"), message("o-1"));
    List<Acknowledgement> acks = List.of(
        new RecordingAcknowledgement(), new RecordingAcknowledgement(), new RecordingAcknowledgement());

    assertThat(pipeline(true).processBatch(batch, acks)).containsOnly(ProcessingOutcome.PROCESSED);

    assertThat(handled).containsExactly("o-1", "o-2", "o-1");
    assertThat(store.isProcessed(new IdempotencyKey("state", "o-2", KeySource.HEADER))).isFalse();
  }

  @Test
  void aKeylessMessageIsStillDeadLettered() {
    RecordingAcknowledgement ack = new RecordingAcknowledgement();
    assertThat(pipeline(true).process(message(null), ack)).isEqualTo(ProcessingOutcome.DEAD_LETTERED);
    assertThat(handled).isEmpty();
  }

  /** A store whose claim check needs the marker refuses the option when the pipeline is built. */
  @Test
  void aStoreThatConfirmsByTheMarkerRefusesTheOptionAtBuild() {
    ForwardingProcessedEventStore<InMemoryTransaction> markerChecking = new ForwardingProcessedEventStore<>(store) {
      @Override
      public boolean confirmsWithoutMarkers() {
        return false;
      }
    };
    assertThatThrownBy(() -> IdempotentConsumer.builder(markerChecking).consumerGroup("state")
        .handler(recording).naturallyIdempotent(true).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("naturallyIdempotent(true) does not go with this store");
    assertThat(IdempotentConsumer.builder(markerChecking).consumerGroup("state").handler(recording).build()
        .process(message("o-2"), new RecordingAcknowledgement())).isEqualTo(ProcessingOutcome.PROCESSED);
  }

}
