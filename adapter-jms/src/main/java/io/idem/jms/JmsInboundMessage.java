package io.idem.jms;

import io.idem.InboundMessage;
import io.idem.spi.DecodedHeaders;
import jakarta.jms.BytesMessage;
import jakarta.jms.JMSException;
import jakarta.jms.Message;
import jakarta.jms.TextMessage;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * One JMS delivery as an {@link InboundMessage}. Not changed once handed to the pipeline; {@link #unwrap(Class)}
 * with {@code jakarta.jms.Message.class} returns the native message (single-threaded, like its
 * session: read it only on the processing thread).
 *
 * <ul>
 *   <li>{@link #headers()}: the message's String properties, each under its JMS name and its
 *       {@link JmsHeaderNames dash alias} ({@code idempotency_key} also as
 *       {@code idempotency-key}). Properties of other types (numbers, booleans) are left out. A
 *       String property holding an unpaired UTF-16 surrogate cannot be encoded as UTF-8: it is
 *       listed in {@link #undecodableHeaders()} instead.
 *   <li>{@link #payload()}: a {@code BytesMessage}'s bytes; a {@code TextMessage}'s text as
 *       UTF-8; empty for any other type (Map, Stream, Object or body-less messages; the handler
 *       can unwrap the native message; an {@code ObjectMessage} is never deserialized here).
 *   <li>{@link #brokerMessageId()}: {@code JMSMessageID}. It changes when a message is re-sent
 *       and across bridges, so it is a key only through the explicit
 *       {@link io.idem.IdempotencyKeyExtractor#brokerMessageId()} fallback.
 *   <li>{@link #deliveryAttempt()}: {@code JMSXDeliveryCount} (set by every JMS 2.0+ provider);
 *       if absent, 2 when {@code JMSRedelivered} is set, else 1. Under {@link JmsIdempotentConsumer}
 *       a retry after a handler failure in this consumer's life is counted by the consumer
 *       instead (that count is not raised by another message's process deaths).
 *   <li>{@link #unaccountedRedelivery()}: set by {@link JmsIdempotentConsumer} for a delivery the
 *       broker marks as delivered before ({@code JMSRedelivered}, {@code JMSXDeliveryCount} above
 *       1) when the consumer does not know how the earlier delivery ended; {@code false} as read
 *       by {@link #of}.
 * </ul>
 */
public final class JmsInboundMessage implements InboundMessage {
  private static final String DELIVERY_COUNT = "JMSXDeliveryCount";

  private final String source;
  private final Map<String, String> headers;
  private final Set<String> undecodableHeaders;
  private final byte[] payload;
  private final @Nullable String brokerMessageId;
  private final int brokerDeliveryCount;
  private int deliveryAttempt;
  private final Instant receivedAt;
  private final Message message;
  private int brokerAttemptLimit = Integer.MAX_VALUE;
  private boolean unaccountedRedelivery;

  private JmsInboundMessage(
      String source,
      Map<String, String> headers,
      Set<String> undecodableHeaders,
      byte[] payload,
      @Nullable String brokerMessageId,
      int brokerDeliveryCount,
      Instant receivedAt,
      Message message) {
    this.source = source;
    this.headers = headers;
    this.undecodableHeaders = undecodableHeaders;
    this.payload = payload;
    this.brokerMessageId = brokerMessageId;
    this.brokerDeliveryCount = brokerDeliveryCount;
    this.deliveryAttempt = brokerDeliveryCount;
    this.receivedAt = receivedAt;
    this.message = message;
  }

  /**
   * Reads a received message as the adapter does; for integrations with their own JMS listener
   * and for tools that read dead-letter queues. Call it on the thread that owns the message's
   * session.
   *
   * @param source the queue name it was consumed from
   * @param receivedAt when it was received
   * @throws JMSException when the provider cannot read a property or the body
   */
  public static JmsInboundMessage of(Message message, String source, Instant receivedAt)
      throws JMSException {
    Objects.requireNonNull(message, "message");
    Objects.requireNonNull(source, "source");
    Objects.requireNonNull(receivedAt, "receivedAt");
    Map<String, Object> properties = new LinkedHashMap<>();
    for (Enumeration<?> names = message.getPropertyNames(); names.hasMoreElements(); ) {
      String name = (String) names.nextElement();
      Object value = message.getObjectProperty(name);
      if (value != null) {
        properties.put(name, value);
      }
    }
    DecodedHeaders decoded = decodeHeaders(properties);
    return new JmsInboundMessage(
        source,
        decoded.text(),
        decoded.undecodable(),
        payloadOf(message),
        message.getJMSMessageID(),
        attemptOf(message),
        receivedAt,
        message);
  }

  /**
   * Turns JMS properties into headers through {@link DecodedHeaders}: each String property under
   * its JMS name and, unless a property has that name, under its {@link JmsHeaderNames dash
   * alias}; a value with an unpaired surrogate (no UTF-8 form) is undecodable under both names;
   * properties of other types are left out.
   */
  static DecodedHeaders decodeHeaders(Map<String, Object> properties) {
    DecodedHeaders.Builder headers = DecodedHeaders.builder();
    for (Map.Entry<String, Object> property : properties.entrySet()) {
      if (property.getValue() instanceof String value) {
        if (isWellFormed(value)) {
          headers.text(property.getKey(), value);
        } else {
          headers.undecodable(property.getKey());
        }
      }
    }
    Set<String> aliased = new HashSet<>();
    for (Map.Entry<String, Object> property : properties.entrySet()) {
      String alias = JmsHeaderNames.toHeaderName(property.getKey());
      if (property.getValue() instanceof String value && !properties.containsKey(alias) && aliased.add(alias)) {
        if (isWellFormed(value)) {
          headers.text(alias, value);
        } else {
          headers.undecodable(alias);
        }
      }
    }
    return headers.build();
  }

  /** False when {@code s} holds an unpaired surrogate, which has no UTF-8 encoding. */
  static boolean isWellFormed(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (Character.isHighSurrogate(c)) {
        if (i + 1 >= s.length() || !Character.isLowSurrogate(s.charAt(i + 1))) {
          return false;
        }
        i++;
      } else if (Character.isLowSurrogate(c)) {
        return false;
      }
    }
    return true;
  }

  private static byte[] payloadOf(Message message) throws JMSException {
    if (message instanceof BytesMessage bytes) {
      byte[] body = bytes.getBody(byte[].class);
      return body == null ? new byte[0] : body;
    }
    if (message instanceof TextMessage text) {
      String body = text.getText();
      return body == null ? new byte[0] : body.getBytes(StandardCharsets.UTF_8);
    }
    return new byte[0];
  }

  private static int attemptOf(Message message) throws JMSException {
    if (message.propertyExists(DELIVERY_COUNT)) {
      try {
        return Math.max(1, message.getIntProperty(DELIVERY_COUNT));
      } catch (JMSException | NumberFormatException notAnInt) {
        // a provider that sets it as something else: fall through to JMSRedelivered
      }
    }
    return message.getJMSRedelivered() ? 2 : 1;
  }

  @Override
  public String source() {
    return source;
  }

  @Override
  public Map<String, String> headers() {
    return headers;
  }

  /**
   * {@code property 'idempotency_key'} for {@code idempotency-key}: the JMS property the header is
   * read from ({@link JmsHeaderNames}); a name that maps to no valid property name is named as given.
   */
  @Override
  public String describeHeader(String name) {
    String property = name.replace('-', '_');
    return "property '" + (JmsHeaderNames.isValidPropertyName(property) ? property : name) + "'";
  }

  @Override
  public Set<String> undecodableHeaders() {
    return undecodableHeaders;
  }

  /** The payload bytes; shared, not copied: do not modify. */
  @Override
  public byte[] payload() {
    return payload;
  }

  @Override
  public @Nullable String brokerMessageId() {
    return brokerMessageId;
  }

  /**
   * The broker's {@code max-delivery-attempts} for this queue as read at start (Artemis) or
   * declared in the configuration ({@code JmsConsumerConfig.Builder#brokerMaxDeliveryAttempts}),
   * {@link Integer#MAX_VALUE} when unlimited: the pipeline dead-letters at the lower of this and
   * its own {@code maxAttempts}. {@link Integer#MAX_VALUE} as well for a delivery whose count is
   * {@linkplain #countInflated() inflated}: the adapter then keeps it in its session on the
   * broker's last delivery instead of charging it with other messages' deliveries.
   */
  @Override
  public int brokerAttemptLimit() {
    return countInflated() ? Integer.MAX_VALUE : brokerAttemptLimit;
  }

  /**
   * Whether {@code JMSXDeliveryCount} may count more than this message's own handler runs: an
   * {@linkplain #unaccountedRedelivery() unaccounted redelivery} (Artemis raises the count of every
   * message a dying session held, prefetched ones included), or a count above {@link
   * #deliveryAttempt()}.
   */
  boolean countInflated() {
    return unaccountedRedelivery || brokerDeliveryCount > deliveryAttempt;
  }

  /**
   * The same message as attempt {@code attempt}, not flagged as an unaccounted redelivery: a batch
   * retries a failed message inside its session, where {@code JMSXDeliveryCount} does not move.
   */
  JmsInboundMessage withDeliveryAttempt(int attempt) {
    JmsInboundMessage again = new JmsInboundMessage(source, headers, undecodableHeaders, payload,
        brokerMessageId, brokerDeliveryCount, receivedAt, message).withBrokerAttemptLimit(brokerAttemptLimit);
    again.deliveryAttempt = attempt;
    return again;
  }

  /**
   * Sets {@link #deliveryAttempt()} and {@link #unaccountedRedelivery()} from the consumer's
   * {@link JmsDeliveryAttempts}; the worker does it once, before processing.
   */
  JmsInboundMessage withAttempt(JmsDeliveryAttempts.Attempt attempt) {
    this.deliveryAttempt = attempt.number();
    this.unaccountedRedelivery = attempt.unaccounted();
    return this;
  }

  /**
   * {@code JMSXDeliveryCount} as the broker set it (2 when only {@code JMSRedelivered} is set,
   * else 1): what the broker compares with its {@code max-delivery-attempts} and bases its
   * redelivery delay on, whatever {@link #deliveryAttempt()} says.
   */
  int brokerDeliveryCount() {
    return brokerDeliveryCount;
  }

  /** This consumer life's attempt of the delivery, from which an in-life retry counts on. */
  int inLifeAttempt() {
    return JmsDeliveryAttempts.inLife(deliveryAttempt, unaccountedRedelivery);
  }

  /**
   * Whether the delivery may have been handed to a handler before without that run being counted
   * (its process died, an {@code Error} stopped the worker): see the class description. The
   * pipeline then counts the attempt in the store before the handler runs.
   */
  @Override
  public boolean unaccountedRedelivery() {
    return unaccountedRedelivery;
  }

  /** Sets {@link #brokerAttemptLimit()}; the worker does it once, before processing. */
  JmsInboundMessage withBrokerAttemptLimit(int limit) {
    this.brokerAttemptLimit = limit;
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

  /** Present for {@code jakarta.jms.Message.class} and the message's own JMS types. */
  @Override
  public <T> Optional<T> unwrap(Class<T> type) {
    return type.isInstance(message) ? Optional.of(type.cast(message)) : Optional.empty();
  }

  @Override
  public String toString() {
    return "JmsInboundMessage[source=" + source + ", JMSMessageID=" + brokerMessageId
        + ", attempt=" + deliveryAttempt + (unaccountedRedelivery ? ", unaccountedRedelivery" : "")
        + ", headers=" + headers.keySet()
        + ", payload=" + payload.length + " bytes]";
  }
}
