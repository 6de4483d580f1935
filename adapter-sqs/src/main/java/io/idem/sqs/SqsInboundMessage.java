package io.idem.sqs;

import io.idem.InboundMessage;
import io.idem.spi.DecodedHeaders;
import io.idem.spi.Utf8;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.core.SdkBytes;
import software.amazon.awssdk.services.sqs.model.Message;
import software.amazon.awssdk.services.sqs.model.MessageAttributeValue;
import software.amazon.awssdk.services.sqs.model.MessageSystemAttributeName;

/**
 * One SQS delivery as an {@link InboundMessage}: {@link #unwrap(Class) unwrap(Message.class)}
 * returns the SDK's {@link Message} (with the receipt handle of this delivery). Immutable and
 * thread-safe.
 *
 * <ul>
 *   <li>{@link #headers()} — the message attributes (through {@link DecodedHeaders}, in name
 *       order): {@code String} and {@code Number} types (and
 *       their custom {@code String.x}/{@code Number.x} labels) by their text value;
 *       {@code Binary} ones decoded as strict UTF-8, or listed in {@link #undecodableHeaders()}.
 *       An attribute of type {@value #EMPTY_STRING_TYPE} is the empty string (SQS refuses empty
 *       attribute values).
 *   <li>{@link #payload()} — the body as UTF-8 bytes, or the Base64-decoded body when the
 *       attribute {@value #BODY_ENCODING_ATTRIBUTE} is {@value #BASE64} (SQS bodies are text
 *       limited to XML characters, so binary payloads travel as Base64).
 *   <li>{@link #brokerMessageId()} — the {@code MessageId}.
 *   <li>{@link #deliveryAttempt()} — the handler run this delivery stands for: the system
 *       attribute {@code ApproximateReceiveCount} ("approximate" on AWS: a receive whose response
 *       was lost still counts) as {@link #of} reads it; {@link SqsIdempotentConsumer} subtracts the
 *       receives it handed back without running the handler and adds the retries it ran in
 *       process (a FIFO message retried ahead of the rest of its group).
 *   <li>{@link #unaccountedRedelivery()} — set by the consumer for a receive that may follow a
 *       handler run nobody counted (the process died during it).
 * </ul>
 *
 * <p>Producers write messages this adapter reads back unchanged with
 * {@link #messageBody(byte[])} and {@link #messageAttributes(Map, byte[])}.
 */
public final class SqsInboundMessage implements InboundMessage {
  private static final Logger LOG = LoggerFactory.getLogger(SqsInboundMessage.class);

  /** Attribute telling how the body encodes the payload: {@value}. */
  public static final String BODY_ENCODING_ATTRIBUTE = "idem-body-encoding";
  /** Value of {@link #BODY_ENCODING_ATTRIBUTE} for a Base64 body: {@value}. */
  public static final String BASE64 = "base64";
  /**
   * Attribute data type standing for an empty string value (its {@code StringValue} is ignored):
   * {@value}. SQS rejects empty attribute values.
   */
  public static final String EMPTY_STRING_TYPE = "String.idem-empty";

  private final String source;
  private final Message message;
  private final Map<String, String> headers;
  private final Set<String> undecodable;
  private final byte[] payload;
  private final int deliveryAttempt;
  private final Instant receivedAt;
  private final boolean unaccountedRedelivery;
  private int brokerAttemptLimit = Integer.MAX_VALUE;

  private SqsInboundMessage(
      String source, Message message, Map<String, String> headers, Set<String> undecodable,
      byte[] payload, int deliveryAttempt, Instant receivedAt, boolean unaccountedRedelivery) {
    this.source = source;
    this.message = message;
    this.headers = headers;
    this.undecodable = undecodable;
    this.payload = payload;
    this.deliveryAttempt = deliveryAttempt;
    this.receivedAt = receivedAt;
    this.unaccountedRedelivery = unaccountedRedelivery;
  }

  /**
   * Wraps a received message.
   *
   * @param source the queue name
   * @param message as {@code ReceiveMessage} returned it, with message attributes and system
   *     attributes requested
   * @param receivedAt when the adapter received it
   */
  public static SqsInboundMessage of(String source, Message message, Instant receivedAt) {
    Objects.requireNonNull(source, "source");
    Objects.requireNonNull(message, "message");
    Objects.requireNonNull(receivedAt, "receivedAt");
    DecodedHeaders.Builder decoded = DecodedHeaders.builder();
    new TreeMap<>(message.messageAttributes()).forEach((name, value) -> decode(decoded, name, value));
    DecodedHeaders headers = decoded.build();
    return new SqsInboundMessage(
        source, message, headers.text(), headers.undecodable(),
        payload(message, headers.text()), receiveCount(message), receivedAt, false);
  }

  /**
   * The last attempt SQS leaves Idem before the queue's {@code RedrivePolicy} moves the message
   * without a reason: this attempt plus the receives left below {@code maxReceiveCount} (SQS moves
   * a message whose receive count would pass it); {@link Integer#MAX_VALUE} without a
   * RedrivePolicy, and while the message is retried in process (kept hidden, so no receive is
   * spent). The pipeline dead-letters with its own reason at the lower of this and
   * {@code maxAttempts}.
   */
  @Override
  public int brokerAttemptLimit() {
    return brokerAttemptLimit;
  }

  /** Sets {@link #brokerAttemptLimit()}; done by the consumer before each run. */
  void brokerAttemptLimit(int limit) {
    this.brokerAttemptLimit = limit;
  }

  /**
   * The same delivery reporting {@code attempt} as its {@link #deliveryAttempt()}: the consumer's
   * count of handler runs where it differs from {@code ApproximateReceiveCount}.
   */
  SqsInboundMessage withDeliveryAttempt(int attempt) {
    return new SqsInboundMessage(
        source, message, headers, undecodable, payload, attempt, receivedAt, unaccountedRedelivery);
  }

  /**
   * True when SQS received this message before ({@code ApproximateReceiveCount} above 1) and the
   * consumer does not know how that receive ended: it never saw the message (another process, or
   * this one before a restart, received it — and may have died in its handler), or it started its
   * handler and never saw an outcome (an {@code Error} stopped the consumer). The pipeline then
   * counts the attempt in the store before the handler runs (docs/FAILURES.md, "Attempts that
   * survive the process"). False for a first receive, for a receive after this consumer's own
   * retry or hand-back, and as read by {@link #of}.
   */
  @Override
  public boolean unaccountedRedelivery() {
    return unaccountedRedelivery;
  }

  /** The same delivery with {@link #unaccountedRedelivery()} set to {@code value}. */
  SqsInboundMessage withUnaccountedRedelivery(boolean value) {
    return value == unaccountedRedelivery ? this : new SqsInboundMessage(
        source, message, headers, undecodable, payload, deliveryAttempt, receivedAt, value);
  }

  private static void decode(DecodedHeaders.Builder decoded, String name, MessageAttributeValue value) {
    String type = value.dataType() == null ? "" : value.dataType();
    if (type.equals(EMPTY_STRING_TYPE)) {
      decoded.text(name, "");
    } else if (type.startsWith("Binary")) {
      SdkBytes bytes = value.binaryValue();
      if (bytes == null) {
        decoded.undecodable(name);
      } else {
        decoded.bytes(name, bytes.asByteArray());
      }
    } else if (value.stringValue() == null) {
      decoded.undecodable(name);
    } else {
      decoded.text(name, value.stringValue());
    }
  }

  private static byte[] payload(Message message, Map<String, String> headers) {
    String body = message.body() == null ? "" : message.body();
    if (BASE64.equals(headers.get(BODY_ENCODING_ATTRIBUTE))) {
      try {
        return Base64.getDecoder().decode(body);
      } catch (IllegalArgumentException e) {
        LOG.warn("message {} says {}={} but its body is not Base64; delivering the body text as is",
            message.messageId(), BODY_ENCODING_ATTRIBUTE, BASE64);
      }
    }
    return body.getBytes(StandardCharsets.UTF_8);
  }

  /** {@code ApproximateReceiveCount}, at least 1. */
  static int receiveCount(Message message) {
    String count = message.attributes().get(MessageSystemAttributeName.APPROXIMATE_RECEIVE_COUNT);
    if (count == null) {
      return 1;
    }
    try {
      return Math.max(1, Integer.parseInt(count.trim()));
    } catch (NumberFormatException e) {
      return 1;
    }
  }

  @Override
  public String source() {
    return source;
  }

  @Override
  public Map<String, String> headers() {
    return headers;
  }

  /** {@code message attribute 'name'}: an SQS message's headers are its message attributes. */
  @Override
  public String describeHeader(String name) {
    return "message attribute '" + name + "'";
  }

  @Override
  public Set<String> undecodableHeaders() {
    return undecodable;
  }

  @Override
  public byte[] payload() {
    return payload;
  }

  /** The SQS {@code MessageId}. */
  @Override
  public String brokerMessageId() {
    return message.messageId();
  }

  @Override
  public int deliveryAttempt() {
    return deliveryAttempt;
  }

  @Override
  public Instant receivedAt() {
    return receivedAt;
  }

  /** The FIFO {@code MessageGroupId}, or {@code null} on a standard queue. */
  public @Nullable String messageGroupId() {
    return message.attributes().get(MessageSystemAttributeName.MESSAGE_GROUP_ID);
  }

  /** The receipt handle of this delivery (the only one that may delete it). */
  public String receiptHandle() {
    return message.receiptHandle();
  }

  @Override
  public <T> Optional<T> unwrap(Class<T> type) {
    return type.isInstance(message) ? Optional.of(type.cast(message)) : Optional.empty();
  }

  @Override
  public String toString() {
    return "SqsInboundMessage[queue=" + source + ", messageId=" + message.messageId()
        + ", attempt=" + deliveryAttempt + (unaccountedRedelivery ? ", unaccountedRedelivery" : "")
        + ", headers=" + headers.keySet()
        + ", payload=" + payload.length + " bytes]";
  }

  // ---- producer side ------------------------------------------------------------------------

  /**
   * The body under which this adapter reads {@code payload} back: the text itself when it is
   * valid UTF-8 made of characters SQS accepts, otherwise its Base64 form (pair it with
   * {@link #messageAttributes(Map, byte[])}, which then adds {@value #BODY_ENCODING_ATTRIBUTE}).
   *
   * @throws IllegalArgumentException when {@code payload} is empty (SQS refuses empty bodies)
   */
  public static String messageBody(byte[] payload) {
    String text = sqsText(payload);
    return text != null ? text : Base64.getEncoder().encodeToString(payload);
  }

  /**
   * Message attributes carrying {@code headers} as {@code String} attributes (empty values as
   * {@value #EMPTY_STRING_TYPE}), plus {@value #BODY_ENCODING_ATTRIBUTE} when {@code payload}
   * travels as Base64. SQS allows at most 10 attributes per message and restricts their names
   * (letters, digits, {@code -_.}); it is the producer's call to stay within that.
   *
   * @throws IllegalArgumentException when {@code payload} is empty
   */
  public static Map<String, MessageAttributeValue> messageAttributes(Map<String, String> headers, byte[] payload) {
    Map<String, MessageAttributeValue> attributes = new LinkedHashMap<>();
    headers.forEach((name, value) -> attributes.put(name, stringAttribute(value)));
    if (sqsText(payload) == null) {
      attributes.put(BODY_ENCODING_ATTRIBUTE, stringAttribute(BASE64));
    }
    return attributes;
  }

  static MessageAttributeValue stringAttribute(String value) {
    return value.isEmpty()
        ? MessageAttributeValue.builder().dataType(EMPTY_STRING_TYPE).stringValue("(empty)").build()
        : MessageAttributeValue.builder().dataType("String").stringValue(value).build();
  }

  /** The payload as SQS body text, or null when it must be Base64-encoded. */
  private static @Nullable String sqsText(byte[] payload) {
    Objects.requireNonNull(payload, "payload");
    if (payload.length == 0) {
      throw new IllegalArgumentException("payload must not be empty (SQS refuses empty message bodies)");
    }
    String text = Utf8.decodeStrict(payload);
    if (text == null) {
      return null;
    }
    for (int i = 0; i < text.length(); ) {
      int c = text.codePointAt(i);
      boolean allowed = c == 0x9 || c == 0xA || c == 0xD
          || (c >= 0x20 && c <= 0xD7FF) || (c >= 0xE000 && c <= 0xFFFD) || (c >= 0x10000 && c <= 0x10FFFF);
      if (!allowed) {
        return null;
      }
      i += Character.charCount(c);
    }
    return text;
  }
}
