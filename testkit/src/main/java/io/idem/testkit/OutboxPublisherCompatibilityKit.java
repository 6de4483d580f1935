package io.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import io.idem.DeadLetterReason;
import io.idem.IdempotencyKey;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.KeySource;
import io.idem.ProcessingOutcome;
import io.idem.spi.Acknowledgement;
import io.idem.spi.OutboxMessage;
import io.idem.spi.OutboxPublishResult;
import io.idem.spi.OutboxPublisher;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What every {@link OutboxPublisher} must do, on its real broker: a published message carries the
 * row's payload, its extra headers and its idempotency key where the next Idem consumer's default
 * extractor finds it; a repeated publish (the relay's at-least-once) carries the same key, so an
 * Idem consumer applies it once; rows of one ordering key arrive in publish order, also when
 * published as one batch ({@link OutboxPublisher#publishAll}), which confirms each row.
 *
 * <p>An adapter's IT extends it in a few lines: a publisher, a fresh destination, and a receive
 * that turns what the broker delivers into the adapter's own {@link InboundMessage}.
 */
public abstract class OutboxPublisherCompatibilityKit {
  private @Nullable String destination;
  private @Nullable OutboxPublisher publisher;
  private long nextId = 1;

  /** A publisher for the broker under test; closed after each test. */
  protected abstract OutboxPublisher newPublisher() throws Exception;

  /** A new, empty destination (topic, queue, queue URL) named after {@code name}. */
  protected abstract String newDestination(String name) throws Exception;

  /** Removes what {@link #newDestination} created. */
  protected abstract void deleteDestination(String destination) throws Exception;

  /**
   * Receives until {@code count} messages arrived from {@code destination} or {@code timeout}
   * passed, in arrival order, each as the adapter's own inbound message; returns what came.
   */
  protected abstract List<InboundMessage> receive(String destination, int count, Duration timeout)
      throws Exception;

  /** Whether the destination drops a repeat with the same key itself (an SQS FIFO queue). */
  protected boolean deduplicatesByKey() {
    return false;
  }

  /** How long a receive of the kit's few messages may take: 30 s. */
  protected Duration receiveTimeout() {
    return Duration.ofSeconds(30);
  }

  @BeforeEach
  void openDestination() throws Exception {
    destination = newDestination("outbox-kit-" + UUID.randomUUID().toString().substring(0, 8));
    publisher = newPublisher();
  }

  @AfterEach
  void closeDestination() throws Exception {
    if (publisher != null) {
      publisher.close();
    }
    if (destination != null) {
      deleteDestination(destination);
    }
  }

  /** A row as the relay would hand it over. */
  protected OutboxMessage row(String key, @Nullable String orderingKey, String payload, Map<String, String> headers) {
    return new OutboxMessage(nextId++, key, destination(), orderingKey,
        payload.getBytes(StandardCharsets.UTF_8), headers, 1, Instant.now());
  }

  protected String destination() {
    return java.util.Objects.requireNonNull(destination, "destination");
  }

  protected OutboxPublisher publisher() {
    return java.util.Objects.requireNonNull(publisher, "publisher");
  }

  @Test
  void aPublishedMessageCarriesPayloadHeadersAndTheKeyTheNextConsumerFinds() throws Exception {
    publisher().publish(row("order-1:receipt", null, "{\"total\":42}", Map.of("type", "receipt")));
    List<InboundMessage> received = receive(destination(), 1, receiveTimeout());
    assertThat(received).hasSize(1);
    InboundMessage message = received.get(0);
    assertThat(message.payload()).asString(StandardCharsets.UTF_8).isEqualTo("{\"total\":42}");
    assertThat(message.header("type")).isEqualTo("receipt");
    List<IdempotencyKey> keys = new ArrayList<>();
    assertThat(downstream(keys).process(message, new NoAck())).isEqualTo(ProcessingOutcome.PROCESSED);
    assertThat(keys).singleElement().satisfies(k -> {
      assertThat(k.value()).isEqualTo("order-1:receipt");
      assertThat(k.source()).isEqualTo(KeySource.HEADER);
    });
  }

  @Test
  void aRepeatedPublishCarriesTheSameKeyAndIsAppliedOnce() throws Exception {
    OutboxMessage row = row("order-2:receipt", null, "receipt 2", Map.of());
    publisher().publish(row);
    publisher().publish(row); // the relay died after the confirm, before marking it sent
    publisher().publish(row("order-3:receipt", null, "receipt 3", Map.of())); // a marker that all came
    int expected = deduplicatesByKey() ? 2 : 3;
    List<InboundMessage> received = receive(destination(), expected, receiveTimeout());
    assertThat(received).hasSize(expected);
    List<IdempotencyKey> applied = new ArrayList<>();
    IdempotentConsumer<InMemoryTransaction> consumer = downstream(applied);
    List<ProcessingOutcome> outcomes = new ArrayList<>();
    for (InboundMessage m : received) {
      outcomes.add(consumer.process(m, new NoAck()));
    }
    assertThat(applied).extracting(IdempotencyKey::value)
        .containsExactlyInAnyOrder("order-2:receipt", "order-3:receipt");
    assertThat(outcomes).filteredOn(o -> o == ProcessingOutcome.DUPLICATE).hasSize(expected - 2);
  }

  @Test
  void rowsOfOneOrderingKeyArriveInPublishOrder() throws Exception {
    for (int i = 1; i <= 5; i++) {
      publisher().publish(row("order-4:event-" + i, "order-4", "event " + i, Map.of()));
    }
    List<InboundMessage> received = receive(destination(), 5, receiveTimeout());
    assertThat(received).extracting(m -> new String(m.payload(), StandardCharsets.UTF_8))
        .containsExactly("event 1", "event 2", "event 3", "event 4", "event 5");
  }

  /**
   * {@link OutboxPublisher#publishAll}: one batch of two interleaved ordering keys and unordered
   * rows is confirmed row by row (one sent result per row, in the batch's order), every row
   * arrives once, and each key's rows arrive in batch order.
   */
  @Test
  void aBatchKeepsEachOrderingKeysOrderAndConfirmsEveryRow() throws Exception {
    List<OutboxMessage> batch = new ArrayList<>();
    for (int i = 1; i <= 4; i++) {
      batch.add(row("order-5:event-" + i, "order-5", "order-5 " + i, Map.of("seq", "" + i)));
      batch.add(row("order-6:event-" + i, "order-6", "order-6 " + i, Map.of("seq", "" + i)));
      if (i % 2 == 0) {
        batch.add(row("free-" + i, null, "free " + i, Map.of()));
      }
    }
    List<OutboxPublishResult> results = publisher().publishAll(batch);
    assertThat(results).extracting(OutboxPublishResult::id)
        .containsExactlyElementsOf(batch.stream().map(OutboxMessage::id).toList());
    assertThat(results).allSatisfy(r -> assertThat(r.status()).as("row %s: %s", r.id(), r.failure())
        .isEqualTo(OutboxPublishResult.Status.SENT));
    List<InboundMessage> received = receive(destination(), batch.size(), receiveTimeout());
    List<String> payloads = received.stream().map(m -> new String(m.payload(), StandardCharsets.UTF_8)).toList();
    assertThat(payloads).containsExactlyInAnyOrderElementsOf(
        batch.stream().map(m -> new String(m.payload(), StandardCharsets.UTF_8)).toList());
    assertThat(payloads.stream().filter(p -> p.startsWith("order-5 ")))
        .containsExactly("order-5 1", "order-5 2", "order-5 3", "order-5 4");
    assertThat(payloads.stream().filter(p -> p.startsWith("order-6 ")))
        .containsExactly("order-6 1", "order-6 2", "order-6 3", "order-6 4");
  }

  private static IdempotentConsumer<InMemoryTransaction> downstream(List<IdempotencyKey> applied) {
    return IdempotentConsumer.builder(new InMemoryProcessedEventStore())
        .consumerGroup("downstream")
        .handler((IdempotencyKey key, InboundMessage message, InMemoryTransaction tx) -> applied.add(key))
        .build();
  }

  /** The kit settles nothing on the broker: it only asks the pipeline what it decided. */
  private static final class NoAck implements Acknowledgement {
    @Override
    public void ack() {}

    @Override
    public void retry(Duration delay) {}

    @Override
    public void deadLetter(DeadLetterReason reason) {}
  }
}
