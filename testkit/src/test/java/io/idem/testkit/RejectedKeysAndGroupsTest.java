package io.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.idem.DeadLetterCause;
import io.idem.IdempotencyKeyExtractor;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.MessageHandler;
import io.idem.ProcessingOutcome;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Groups and keys the store could not keep apart are refused, never merged or thrown. */
class RejectedKeysAndGroupsTest {
  private final InMemoryProcessedEventStore store = new InMemoryProcessedEventStore();
  private final List<String> effects = new ArrayList<>();
  private final MessageHandler<InMemoryTransaction> recording =
      (m, tx) -> tx.onCommit(() -> effects.add(m.header("ce_id")));

  private IdempotentConsumer.Builder<InMemoryTransaction> pipeline(String group) {
    return IdempotentConsumer.builder(store).consumerGroup(group).handler(recording);
  }

  private static InboundMessage cloudEvent(String source, String id) {
    return InboundMessage.builder("orders", "{}".getBytes(StandardCharsets.UTF_8))
        .header("ce_source", source).header("ce_id", id).build();
  }

  @Test
  void consumerGroupsDifferingOnlyInUnpairedSurrogatesAreRefusedAtBuild() {
    assertThatThrownBy(() -> pipeline("billing\uD800").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("consumerGroup must be valid Unicode, but has an unpaired surrogate U+D800 at index 7");
    assertThatThrownBy(() -> pipeline("billing\uDBFF").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("consumerGroup must be valid Unicode, but has an unpaired surrogate U+DBFF at index 7");
  }

  @Test
  void consumerGroupWithNulOrControlCharacterIsRefusedAtBuild() {
    assertThatThrownBy(() -> pipeline("billing\0").build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("NUL");
    assertThatThrownBy(() -> pipeline("billing\t").build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("control characters");
    assertThatThrownBy(() -> pipeline(" ").build()).hasMessageContaining("must not be blank");
    assertThatThrownBy(() -> pipeline("g".repeat(129)).build()).hasMessageContaining("at most 128");
    assertThat(pipeline("billing-\uD83D\uDE00").build().consumerGroup()).isEqualTo("billing-\uD83D\uDE00");
  }

  @Test
  void cloudEventsSourceWithASpaceIsDeadLetteredNotMergedWithAnotherEvent() {
    IdempotentConsumer<InMemoryTransaction> consumer = pipeline("billing").build();
    RecordingAcknowledgement plain = new RecordingAcknowledgement();
    RecordingAcknowledgement spaced = new RecordingAcknowledgement();
    assertThat(consumer.process(cloudEvent("urn:a", "b 1"), plain)).isEqualTo(ProcessingOutcome.PROCESSED);
    assertThat(consumer.process(cloudEvent("urn:a b", "1"), spaced)).isEqualTo(ProcessingOutcome.DEAD_LETTERED);
    assertThat(spaced.reason.cause()).isEqualTo(DeadLetterCause.INVALID_KEY);
    assertThat(spaced.reason.detail()).contains("'ce_source' must be a URI-reference");
    assertThat(effects).containsExactly("b 1");
    assertThat(store.size()).isEqualTo(1);
  }

  @Test
  void extractorReturningNullIsDeadLetteredNotThrown() {
    IdempotencyKeyExtractor returnsNull = m -> null;
    IdempotentConsumer<InMemoryTransaction> consumer = pipeline("billing").keyExtractor(returnsNull).build();
    RecordingAcknowledgement ack = new RecordingAcknowledgement();
    assertThat(consumer.process(cloudEvent("urn:a", "1"), ack)).isEqualTo(ProcessingOutcome.DEAD_LETTERED);
    assertThat(ack.calls).containsExactly("deadLetter");
    assertThat(ack.reason.cause()).isEqualTo(DeadLetterCause.INVALID_KEY);
    assertThat(ack.reason.detail()).isEqualTo("key extractor " + returnsNull + " returned null");
    assertThat(effects).isEmpty();
    assertThat(store.size()).isZero();
  }
}
