package io.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import io.idem.IdempotencyKey;
import io.idem.IdempotencyKeyExtractor;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.KeySource;
import io.idem.OversizedKeyPolicy;
import io.idem.ProcessingOutcome;
import io.idem.internal.Fingerprints;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A keyed handler gets exactly the key the store claimed, whatever extractor found it. */
class KeyedMessageHandlerTest {
  private final InMemoryProcessedEventStore store = new InMemoryProcessedEventStore();
  private final List<IdempotencyKey> keys = new ArrayList<>();

  private IdempotentConsumer.Builder<InMemoryTransaction> keyed() {
    return IdempotentConsumer.builder(store).consumerGroup("billing")
        .handler((key, message, tx) -> keys.add(key));
  }

  private static InboundMessage.Builder message(String payload) {
    return InboundMessage.builder("orders", payload.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void lambdasOfBothAritiesPickTheirOverload() {
    List<String> calls = new ArrayList<>();
    IdempotentConsumer<InMemoryTransaction> plain = IdempotentConsumer.builder(store).consumerGroup("a")
        .handler((m, tx) -> calls.add("plain " + m.header("idempotency-key"))).build();
    IdempotentConsumer<InMemoryTransaction> withKey = IdempotentConsumer.builder(store).consumerGroup("b")
        .handler((k, m, tx) -> calls.add("keyed " + k.value())).build();
    IdempotentConsumer<InMemoryTransaction> throwing = IdempotentConsumer.builder(store).consumerGroup("c")
        .handler((m, tx) -> {
          throw new IllegalStateException("down");
        }).build();
    InboundMessage m = message("{}").header("idempotency-key", "o-1").build();
    plain.process(m, new RecordingAcknowledgement());
    withKey.process(m, new RecordingAcknowledgement());
    assertThat(throwing.process(m, new RecordingAcknowledgement())).isEqualTo(ProcessingOutcome.RETRY);
    assertThat(calls).containsExactly("plain o-1", "keyed o-1");
  }

  @Test
  void cloudEventsKeyIsGivenToTheHandler() {
    InboundMessage m = message("{}").header("ce_source", "/shop/orders").header("ce_id", "A-1").build();
    assertThat(keyed().build().process(m, new RecordingAcknowledgement())).isEqualTo(ProcessingOutcome.PROCESSED);
    IdempotencyKey expected = new IdempotencyKey("billing", "/shop/orders A-1", KeySource.CLOUDEVENTS);
    assertThat(keys).containsExactly(expected);
    assertThat(store.isProcessed(expected)).isTrue();
  }

  @Test
  void jsonPointerKeyIsGivenToTheHandler() {
    keyed().keyExtractor(IdempotencyKeyExtractor.jsonPointer("/orderId")).build()
        .process(message("{\"orderId\":\"o-7\"}").build(), new RecordingAcknowledgement());
    assertThat(keys).containsExactly(new IdempotencyKey("billing", "o-7", KeySource.PAYLOAD));
  }

  @Test
  void hashedKeyIsGivenToTheHandlerNotTheRawValue() {
    String huge = "k".repeat(1000);
    keyed().oversizedKeys(OversizedKeyPolicy.HASH).build()
        .process(message("{}").header("idempotency-key", huge).build(), new RecordingAcknowledgement());
    IdempotencyKey expected = new IdempotencyKey("billing", Fingerprints.hashedKey(huge), KeySource.HEADER);
    assertThat(keys).containsExactly(expected);
    assertThat(store.isProcessed(expected)).isTrue();
  }

  @Test
  void duplicateDoesNotCallTheKeyedHandler() {
    IdempotentConsumer<InMemoryTransaction> consumer = keyed().build();
    InboundMessage m = message("{}").header("idempotency-key", "o-1").build();
    consumer.process(m, new RecordingAcknowledgement());
    assertThat(consumer.process(m, new RecordingAcknowledgement())).isEqualTo(ProcessingOutcome.DUPLICATE);
    assertThat(keys).hasSize(1);
  }
}
