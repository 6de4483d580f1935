package io.idem;

import io.idem.internal.SimpleInboundMessage;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * A broker-neutral view of one delivery. Adapters implement it over their native record
 * ({@code ConsumerRecord}, AMQP delivery, SQS {@code Message}, JMS {@code Message}); tests and
 * custom integrations build one with {@link #builder(String, byte[])}.
 *
 * <p>Implementations are immutable and safe to share between threads.
 */
public interface InboundMessage {

  /** The topic or queue the message was consumed from; never blank. */
  String source();

  /**
   * Headers (Kafka headers, AMQP properties and headers, SQS message attributes, JMS properties)
   * whose values decode as UTF-8 text; unmodifiable. Values that are not valid UTF-8 are left
   * out here and named in {@link #undecodableHeaders()}, so that a key is never read from bytes
   * that were silently replaced.
   */
  Map<String, String> headers();

  /**
   * Names of headers whose value was present but is not valid UTF-8 text; unmodifiable, usually
   * empty. A key extractor that finds its header here rejects the message with a reason.
   */
  default Set<String> undecodableHeaders() {
    return Set.of();
  }

  /**
   * How this broker spells the header {@code name} in a message for people, such as a key
   * extraction's reason: {@code header 'idempotency-key'} by default (Kafka headers, AMQP headers);
   * the SQS adapter says {@code message attribute 'idempotency-key'}, the JMS adapter {@code
   * property 'idempotency_key'} (the JMS property the header is read from: a JMS property name is
   * a Java identifier, so {@code -} is written {@code _}). Only for text: lookups go through
   * {@link #header(String)}.
   *
   * @param name a header name as {@link #headers()} holds it, such as {@code idempotency-key}
   */
  default String describeHeader(String name) {
    return "header '" + name + "'";
  }

  /** The header's value, or {@code null} when absent (or not valid UTF-8). Case-sensitive. */
  default @Nullable String header(String name) {
    return headers().get(name);
  }

  /**
   * The payload bytes as delivered. The array is shared, not copied: callers must not modify it.
   */
  byte[] payload();

  /**
   * The broker's own id for this message, or {@code null} when the broker gave none: Kafka
   * {@code topic-partition@offset}, SQS {@code MessageId}, RabbitMQ {@code message-id}
   * property, JMS {@code JMSMessageID}. Used as an idempotency key only when
   * {@link IdempotencyKeyExtractor#brokerMessageId()} is configured as an explicit fallback.
   */
  @Nullable String brokerMessageId();

  /**
   * Which delivery of this message this is, starting at 1. Best effort per broker: Kafka counts
   * in the adapter (lost on restart), RabbitMQ reads {@code x-delivery-count} on quorum queues,
   * SQS reads {@code ApproximateReceiveCount}, JMS reads {@code JMSXDeliveryCount}.
   */
  int deliveryAttempt();

  /**
   * The broker's own limit on deliveries of this message, past which the broker itself drops or
   * dead-letters it without Idem's reason (Artemis {@code max-delivery-attempts}, SQS
   * {@code maxReceiveCount} of the queue's RedrivePolicy, a RabbitMQ quorum queue's
   * {@code x-delivery-limit}), as the adapter knows it; {@link Integer#MAX_VALUE} (the default)
   * when there is none or it is not known. The pipeline dead-letters a failing message — with its
   * own reason — on attempt {@code min(RetryPolicy.maxAttempts(), brokerAttemptLimit())}, so the
   * broker's limit never acts first (docs/FAILURES.md).
   */
  default int brokerAttemptLimit() {
    return Integer.MAX_VALUE;
  }

  /**
   * Whether this delivery may be a redelivery that {@link #deliveryAttempt()} does not account for:
   * the message may have been handed to a handler before — by a process that died during it, or a
   * consumer an {@link Error} stopped — without the broker's counter (or the adapter's memory)
   * having counted that run. RabbitMQ: {@code redelivered=true} (or a quorum queue's {@code
   * x-delivery-count} above 0) on a message this consumer does not remember; generally, a receive
   * count above 1 after a restart or rebalance. Default {@code false}.
   *
   * <p>Only for such deliveries the pipeline counts the attempt in the store, in a short
   * transaction of its own committed before the handler runs ({@link
   * io.idem.spi.ProcessedEventStore#startAttempt}), and then takes the attempt from that count, not
   * from {@link #deliveryAttempt()} (a broker counter may be raised by redeliveries of prefetched
   * messages that never reached a handler) — so a first delivery pays nothing, and a message that
   * kills the process is dead-lettered after at most {@code maxAttempts} deaths (docs/FAILURES.md,
   * "Attempts that survive the process"). An adapter that answers {@code false} for a delivery
   * that was in fact run before lets such a message loop; one that answers {@code true} too often
   * costs a round trip or two per such delivery, never a wrong outcome.
   */
  default boolean unaccountedRedelivery() {
    return false;
  }

  /** When the adapter received the message from the broker. */
  Instant receivedAt();

  /**
   * The adapter's native object for this delivery, if it is of the given type (for example
   * {@code ConsumerRecord.class} under the Kafka adapter).
   */
  default <T> Optional<T> unwrap(Class<T> type) {
    return Optional.empty();
  }

  /**
   * Starts building a message, for tests and for integrations without an adapter.
   *
   * @param source topic or queue name, not blank
   * @param payload payload bytes; not copied
   */
  static Builder builder(String source, byte[] payload) {
    return new Builder(source, payload);
  }

  /** Builder of a plain {@link InboundMessage}. Not thread-safe. */
  final class Builder {
    private final String source;
    private final byte[] payload;
    private final LinkedHashMap<String, String> headers = new LinkedHashMap<>();
    private final LinkedHashSet<String> undecodable = new LinkedHashSet<>();
    private @Nullable String brokerMessageId;
    private int deliveryAttempt = 1;
    private int brokerAttemptLimit = Integer.MAX_VALUE;
    private boolean unaccountedRedelivery;
    private @Nullable Instant receivedAt;
    private @Nullable Object nativeMessage;

    private Builder(String source, byte[] payload) {
      this.source = Objects.requireNonNull(source, "source");
      this.payload = Objects.requireNonNull(payload, "payload");
    }

    /** Adds a header; a later value for the same name replaces the earlier one. */
    public Builder header(String name, String value) {
      headers.put(
          Objects.requireNonNull(name, "name"),
          Objects.requireNonNull(value, "value"));
      undecodable.remove(name);
      return this;
    }

    /** Adds all headers of the map. */
    public Builder headers(Map<String, String> values) {
      values.forEach(this::header);
      return this;
    }

    /** Records a header whose raw value was not valid UTF-8. */
    public Builder undecodableHeader(String name) {
      headers.remove(name);
      undecodable.add(Objects.requireNonNull(name, "name"));
      return this;
    }

    /** The broker's id for the message ({@link InboundMessage#brokerMessageId()}); default none. */
    public Builder brokerMessageId(@Nullable String id) {
      this.brokerMessageId = id;
      return this;
    }

    /** The 1-based delivery attempt; default 1. */
    public Builder deliveryAttempt(int attempt) {
      if (attempt < 1) {
        throw new IllegalArgumentException("deliveryAttempt must be >= 1, but was " + attempt);
      }
      this.deliveryAttempt = attempt;
      return this;
    }

    /** {@link InboundMessage#brokerAttemptLimit()}; default {@link Integer#MAX_VALUE} (none). */
    public Builder brokerAttemptLimit(int limit) {
      if (limit < 1) {
        throw new IllegalArgumentException("brokerAttemptLimit must be >= 1, but was " + limit);
      }
      this.brokerAttemptLimit = limit;
      return this;
    }

    /** {@link InboundMessage#unaccountedRedelivery()}; default {@code false}. */
    public Builder unaccountedRedelivery(boolean value) {
      this.unaccountedRedelivery = value;
      return this;
    }

    /** Default: the time {@link #build()} is called. */
    public Builder receivedAt(Instant at) {
      this.receivedAt = Objects.requireNonNull(at, "at");
      return this;
    }

    /** The object {@link InboundMessage#unwrap(Class)} returns. */
    public Builder nativeMessage(@Nullable Object value) {
      this.nativeMessage = value;
      return this;
    }

    /**
     * @throws IllegalArgumentException if the source is blank
     */
    public InboundMessage build() {
      if (source.isBlank()) {
        throw new IllegalArgumentException("source must not be blank, but was '" + source + "'");
      }
      return new SimpleInboundMessage(
          source,
          Map.copyOf(headers),
          Set.copyOf(undecodable),
          payload,
          brokerMessageId,
          deliveryAttempt,
          brokerAttemptLimit,
          unaccountedRedelivery,
          receivedAt == null ? Instant.now() : receivedAt,
          nativeMessage);
    }
  }
}
