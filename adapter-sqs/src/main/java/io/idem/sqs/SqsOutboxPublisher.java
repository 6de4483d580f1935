package io.idem.sqs;

import io.idem.NonRetryableException;
import io.idem.TraceContext;
import io.idem.spi.OutboxMessage;
import io.idem.spi.OutboxPublisher;
import io.idem.spi.Utf8;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.MessageAttributeValue;
import software.amazon.awssdk.services.sqs.model.SendMessageRequest;

/**
 * Publishes outbox rows to SQS: the row's destination is the queue URL, the idempotency key in the
 * {@value OutboxMessage#KEY_HEADER} message attribute (where the next Idem consumer's default
 * extractor finds it), extra headers as String attributes (SQS allows 10 attributes per message).
 *
 * <p>On a FIFO queue (URL ending in {@code .fifo}) the {@code MessageDeduplicationId} is the key
 * (its SHA-256 in hex when the key is not 1 to 128 printable ASCII characters, as SQS requires),
 * so SQS itself drops a repeat within its 5-minute deduplication interval, and the {@code
 * MessageGroupId} is the ordering key (the key itself when there is none). A body that is not
 * UTF-8 text of XML characters travels as Base64 with {@value SqsInboundMessage#BODY_ENCODING_ATTRIBUTE} = {@value
 * SqsInboundMessage#BASE64}, which the Idem consumer decodes.
 *
 * <p>{@link #publish} returns once {@code SendMessage} answered (SQS has stored the message).
 * Thread-safe (SqsClient is). The client is the caller's: {@link #close()} leaves it open.
 *
 * <p>What the outbox relay makes of its failures: the SDK's {@code SdkClientException} (no answer:
 * connection refused or reset, timeouts, after the SDK's own retries) and a 5xx or throttling
 * answer are a destination outage, charged to no row; any other answer (a missing queue, an
 * invalid attribute) is one failed attempt of the row.
 */
public final class SqsOutboxPublisher implements OutboxPublisher {
  private static final Pattern DEDUP_ID = Pattern.compile("[\\x21-\\x7E]{1,128}");
  private final SqsClient client;

  private SqsOutboxPublisher(SqsClient client) {
    this.client = client;
  }

  /** A publisher sending with {@code client}. */
  public static SqsOutboxPublisher create(SqsClient client) {
    return new SqsOutboxPublisher(Objects.requireNonNull(client, "client"));
  }

  /**
   * Sends the message and waits for SQS's answer.
   *
   * @throws NonRetryableException when the row has more than 9 extra headers (it would never fit;
   *     the {@code traceparent} attribute of a traced row is left out rather than go over 10)
   * @throws software.amazon.awssdk.core.exception.SdkException when SQS refused it or could not be
   *     reached
   */
  @Override
  public void publish(OutboxMessage message) {
    Map<String, MessageAttributeValue> attributes = new HashMap<>();
    message.headers().forEach((name, value) -> attributes.put(name, text(value)));
    attributes.put(OutboxMessage.KEY_HEADER, text(message.idempotencyKey()));
    String body = Utf8.decodeStrict(message.payload());
    if (body == null || !isXmlText(body)) {
      body = Base64.getEncoder().encodeToString(message.payload());
      attributes.put(SqsInboundMessage.BODY_ENCODING_ATTRIBUTE, text(SqsInboundMessage.BASE64));
    }
    if (attributes.size() > 10 && message.traceparent() != null) {
      attributes.remove(TraceContext.TRACEPARENT); // the trace context gives way to the row's own headers
    }
    if (attributes.size() > 10) {
      throw new NonRetryableException("SQS allows 10 message attributes, but outbox row "
          + message.id() + " needs " + attributes.size());
    }
    SendMessageRequest.Builder request = SendMessageRequest.builder()
        .queueUrl(message.destination()).messageBody(body).messageAttributes(attributes);
    if (message.destination().endsWith(".fifo")) {
      request.messageDeduplicationId(deduplicationId(message.idempotencyKey()))
          .messageGroupId(message.orderingKey() != null ? message.orderingKey() : message.idempotencyKey());
    }
    client.sendMessage(request.build());
  }

  /** The key itself when SQS accepts it as a deduplication id, else its SHA-256 in hex. */
  static String deduplicationId(String key) {
    if (DEDUP_ID.matcher(key).matches()) {
      return key;
    }
    try {
      return HexFormat.of().formatHex(
          MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
  }

  /** SQS bodies may hold only XML characters (#x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | supplementary). */
  private static boolean isXmlText(String body) {
    return body.codePoints().allMatch(c -> c == 0x9 || c == 0xA || c == 0xD
        || (c >= 0x20 && c <= 0xD7FF) || (c >= 0xE000 && c <= 0xFFFD) || c >= 0x10000);
  }

  private static MessageAttributeValue text(String value) {
    return value.isEmpty()
        ? MessageAttributeValue.builder().dataType(SqsInboundMessage.EMPTY_STRING_TYPE).stringValue("-").build()
        : MessageAttributeValue.builder().dataType("String").stringValue(value).build();
  }
}
