package io.idem.spi;

import io.idem.TraceContext;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * One transactional-outbox row, as a relay hands it to an {@link OutboxPublisher}: what to send,
 * where, and the idempotency key the next consumer deduplicates it by.
 *
 * <p>A row may be handed over more than once (the relay publishes at least once: a crash between
 * the broker's confirmation and the relay's "sent" mark publishes it again), always with the same
 * {@code idempotencyKey}; that is what makes the repeat harmless downstream.
 *
 * @param id the row's id, unique per outbox table (positive)
 * @param idempotencyKey the key every published copy carries (the {@code idempotency-key} header,
 *     attribute or property; an HTTP API's {@code Idempotency-Key}); 1 to 512 characters
 * @param destination where to send it, in the publisher's terms (a Kafka topic, a RabbitMQ
 *     exchange or queue, an SQS queue URL, a JMS queue, an HTTP path); 1 to 255 characters
 * @param orderingKey rows with the same ordering key are published one after another in id order
 *     (a Kafka record key, an SQS FIFO {@code MessageGroupId}); {@code null} when unordered
 * @param payload the body, as enqueued (not copied: do not modify)
 * @param headers extra headers, as enqueued (UTF-8 strings; unmodifiable), and {@value
 *     TraceContext#TRACEPARENT} when the row has a {@code traceparent} and its headers do not name
 *     one: so every publisher, which sends the headers, sends the trace context on too
 * @param attempt this publish attempt, 1-based
 * @param enqueuedAt when the row was written (the database's clock)
 * @param traceparent the W3C trace context stored with the row ({@link TraceContext#forOutbox}:
 *     that of the handler run that enqueued it), {@code null} when none (or not a valid one)
 */
public record OutboxMessage(
    long id,
    String idempotencyKey,
    String destination,
    @Nullable String orderingKey,
    byte[] payload,
    Map<String, String> headers,
    int attempt,
    Instant enqueuedAt,
    @Nullable String traceparent) {

  /** The header (Kafka, RabbitMQ), message attribute (SQS) name the key travels in. */
  public static final String KEY_HEADER = "idempotency-key";

  /** @throws NullPointerException when a required field is null */
  public OutboxMessage {
    Objects.requireNonNull(idempotencyKey, "idempotencyKey");
    Objects.requireNonNull(destination, "destination");
    Objects.requireNonNull(payload, "payload");
    Objects.requireNonNull(headers, "headers");
    Objects.requireNonNull(enqueuedAt, "enqueuedAt");
    if (!TraceContext.isValid(traceparent)) {
      traceparent = null;
    } else if (!headers.containsKey(TraceContext.TRACEPARENT)) {
      Map<String, String> withTrace = new HashMap<>(headers);
      withTrace.put(TraceContext.TRACEPARENT, traceparent);
      headers = withTrace;
    }
    headers = Map.copyOf(headers);
  }

  /** A row without a trace context. */
  public OutboxMessage(long id, String idempotencyKey, String destination,
      @Nullable String orderingKey, byte[] payload, Map<String, String> headers, int attempt,
      Instant enqueuedAt) {
    this(id, idempotencyKey, destination, orderingKey, payload, headers, attempt, enqueuedAt, null);
  }

  @Override
  public String toString() {
    return "OutboxMessage[id=" + id + ", key=" + idempotencyKey + ", destination=" + destination
        + ", orderingKey=" + orderingKey + ", attempt=" + attempt + ", " + payload.length + " bytes]";
  }
}
