package io.idem.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Delivery;
import com.rabbitmq.client.Envelope;
import io.idem.InboundMessage;
import io.idem.spi.DecodedHeaders;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * One AMQP delivery as an {@link InboundMessage}. Immutable and thread-safe (the payload array is
 * shared, not copied).
 *
 * <ul>
 *   <li>{@link #source()}: the queue it was consumed from;
 *   <li>{@link #headers()}: the AMQP {@code headers} table, built with {@link DecodedHeaders} as
 *       every adapter does. Text ({@code longstr}) values are decoded as strict UTF-8 — undecodable ones are left out and named in
 *       {@link #undecodableHeaders()}, never replaced; numbers, booleans and timestamps (as ISO-8601
 *       instants) are written as text; arrays and tables (such as {@code x-death}) are left out.
 *       The {@code content-type} property appears as the header {@code content-type} (replacing a
 *       table entry of that name), so that CloudEvents structured mode is recognized as on the
 *       other brokers ({@link io.idem.EnvelopeFormat#cloudEventsStructured()}); other AMQP
 *       properties ({@code correlation-id}, …) are not headers: read them from {@link #properties()};
 *   <li>{@link #brokerMessageId()}: the {@code message-id} property, never the delivery tag (a
 *       tag numbers deliveries on one channel and repeats on every channel);
 *   <li>{@link #deliveryAttempt()}: see there;
 *   <li>{@link #unwrap(Class)}: {@link Envelope}, {@link AMQP.BasicProperties}, {@link Delivery}
 *       or this class.
 * </ul>
 */
public final class RabbitInboundMessage implements InboundMessage {
  private final String queue;
  private final Envelope envelope;
  private final AMQP.BasicProperties properties;
  private final byte[] body;
  private final int deliveryAttempt;
  private final Instant receivedAt;
  private final DecodedHeaders headers;
  private int brokerAttemptLimit = Integer.MAX_VALUE;
  private boolean unaccountedRedelivery;

  RabbitInboundMessage(
      String queue,
      Envelope envelope,
      AMQP.BasicProperties properties,
      byte[] body,
      int deliveryAttempt,
      Instant receivedAt) {
    this.queue = Objects.requireNonNull(queue, "queue");
    this.envelope = Objects.requireNonNull(envelope, "envelope");
    this.properties = Objects.requireNonNull(properties, "properties");
    this.body = Objects.requireNonNull(body, "body");
    if (deliveryAttempt < 1) {
      throw new IllegalArgumentException("deliveryAttempt must be >= 1, but was " + deliveryAttempt);
    }
    this.deliveryAttempt = deliveryAttempt;
    this.receivedAt = Objects.requireNonNull(receivedAt, "receivedAt");
    this.headers = AmqpHeaders.decode(properties.getHeaders(), properties.getContentType());
  }

  @Override
  public String source() {
    return queue;
  }

  @Override
  public Map<String, String> headers() {
    return headers.text();
  }

  @Override
  public Set<String> undecodableHeaders() {
    return headers.undecodable();
  }

  @Override
  public byte[] payload() {
    return body;
  }

  /** The {@code message-id} property, or {@code null} when the publisher set none. */
  @Override
  public @Nullable String brokerMessageId() {
    return properties.getMessageId();
  }

  /**
   * Which attempt this is — handler runs, from 1. Read from the quorum queue's
   * {@code x-delivery-count} + 1 where present, else {@code x-acquired-count} + 1 (RabbitMQ 4.x),
   * else counted by the adapter (by {@code message-id} and payload; at least 2 when RabbitMQ flags
   * the delivery as {@linkplain #redelivered() redelivered}); corrected by what this consumer saw:
   * after a handler failure the next delivery is at least one attempt later even if the broker's
   * counter did not move (RabbitMQ 4.3+ does not count a {@code basic.nack}), and a delivery handed
   * back unrun after {@link RabbitConsumerConfig#maxHold()} keeps its attempt. What each RabbitMQ
   * version counts: docs/BROKERS.md. Another consumer instance or a restart starts from the
   * broker's counter (classic queues: from 2), so a poison message may get more than
   * {@code maxAttempts} deliveries in all, never fewer.
   */
  /**
   * The quorum queue's {@code x-delivery-limit} as configured ({@code
   * RabbitConsumerConfig.Builder#deliveryLimit}), {@link Integer#MAX_VALUE} otherwise: the
   * pipeline dead-letters with its reason on attempt {@code min(maxAttempts, limit)}, before
   * RabbitMQ would dead-letter (or drop) the message without one.
   */
  @Override
  public int brokerAttemptLimit() {
    return brokerAttemptLimit;
  }

  /**
   * True when RabbitMQ says the message was delivered before ({@code redelivered}, or a quorum
   * queue's {@code x-delivery-count} / {@code x-acquired-count} above 0) and this consumer does not
   * know how that delivery ended — it never saw it (a restart, another instance) or its handler
   * never came back (the channel was lost, an {@link Error} stopped the worker): a process death
   * during the handler is then possible, and the pipeline counts the attempt in the store before
   * the handler runs (docs/FAILURES.md). A redelivery after a failure or hand-back this consumer
   * settled is accounted for in memory.
   */
  @Override
  public boolean unaccountedRedelivery() {
    return unaccountedRedelivery;
  }

  /** Sets {@link #unaccountedRedelivery()}; done once by the consumer before processing. */
  RabbitInboundMessage withUnaccountedRedelivery(boolean value) {
    this.unaccountedRedelivery = value;
    return this;
  }

  /** Sets {@link #brokerAttemptLimit()}; done once by the consumer before processing. */
  RabbitInboundMessage withBrokerAttemptLimit(@Nullable Integer limit) {
    this.brokerAttemptLimit = limit == null ? Integer.MAX_VALUE : limit;
    return this;
  }

  @Override
  public int deliveryAttempt() {
    return deliveryAttempt;
  }

  @Override
  public Instant receivedAt() {
    return receivedAt;
  }

  /**
   * RabbitMQ's {@code redelivered} flag: the message may have been delivered before. Only a hint —
   * the store checks for a duplicate on every delivery, flagged or not.
   */
  public boolean redelivered() {
    return envelope.isRedeliver();
  }

  /** The delivery tag: valid only on the channel that delivered it. */
  public long deliveryTag() {
    return envelope.getDeliveryTag();
  }

  /** Exchange, routing key, delivery tag and redelivered flag. */
  public Envelope envelope() {
    return envelope;
  }

  /** All AMQP properties, headers table included, as delivered. */
  public AMQP.BasicProperties properties() {
    return properties;
  }

  @Override
  public <T> Optional<T> unwrap(Class<T> type) {
    Object value;
    if (type.isInstance(envelope)) {
      value = envelope;
    } else if (type.isInstance(properties)) {
      value = properties;
    } else if (type == Delivery.class) {
      value = new Delivery(envelope, properties, body);
    } else if (type.isInstance(this)) {
      value = this;
    } else {
      return Optional.empty();
    }
    return Optional.of(type.cast(value));
  }

  @Override
  public String toString() {
    return "RabbitInboundMessage[queue=" + queue + ", messageId=" + properties.getMessageId()
        + ", tag=" + envelope.getDeliveryTag() + ", redelivered=" + envelope.isRedeliver()
        + ", attempt=" + deliveryAttempt + ", headers=" + headers.text().keySet()
        + ", payload=" + body.length + " bytes]";
  }
}
