package io.idem.testkit;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.StringJoiner;
import org.jspecify.annotations.Nullable;

/**
 * Envelopes as brokers and platforms put them around a producer's event, for tests of {@link
 * io.idem.EnvelopeFormat} on a real broker path: each method's {@code attempt} stands for one
 * publish, and gives what the platform changes on a producer retry (SNS {@code MessageId},
 * {@code Timestamp} and {@code Signature}; EventBridge {@code id} and {@code time}) a new value
 * while the producer's content stays the same. Stateless; thread-safe.
 */
public final class SampleEnvelopes {
  /** The CloudEvents structured-mode content type: {@value}. */
  public static final String CLOUDEVENTS_JSON = "application/cloudevents+json";
  /** The CloudEvents batch-mode content type: {@value}. */
  public static final String CLOUDEVENTS_BATCH_JSON = "application/cloudevents-batch+json";

  private SampleEnvelopes() {}

  /**
   * An SNS notification as SQS receives it from a topic without raw message delivery.
   *
   * @param message the producer's message (any text)
   * @param stringAttributes the producer's {@code String} message attributes
   * @param subject the publish's subject, or {@code null}
   * @param attempt which publish of the same message this is (1 for the first)
   */
  public static byte[] snsNotification(String message, Map<String, String> stringAttributes,
      @Nullable String subject, int attempt) {
    StringJoiner attributes = new StringJoiner(",", "{", "}");
    stringAttributes.forEach((name, value) -> attributes.add(
        quote(name) + ":{\"Type\":\"String\",\"Value\":" + quote(value) + "}"));
    String id = "5f4e1c2a-0000-4000-8000-" + String.format("%012d", attempt);
    String json = "{\"Type\":\"Notification\",\"MessageId\":\"" + id + "\","
        + "\"TopicArn\":\"arn:aws:sns:eu-west-1:123456789012:orders\","
        + (subject == null ? "" : "\"Subject\":" + quote(subject) + ",")
        + "\"Message\":" + quote(message) + ","
        + "\"Timestamp\":\"2026-12-01T08:00:" + String.format("%02d", attempt % 60) + ".000Z\","
        + "\"SignatureVersion\":\"1\",\"Signature\":\"c2lnbmF0dXJl" + attempt + "==\","
        + "\"SigningCertURL\":\"https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-0.pem\","
        + "\"UnsubscribeURL\":\"https://sns.eu-west-1.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=x\""
        + (stringAttributes.isEmpty() ? "" : ",\"MessageAttributes\":" + attributes) + "}";
    return utf8(json);
  }

  /**
   * A CloudEvent in structured mode, JSON format, with {@code data} a JSON value.
   *
   * @param dataJson the event's data as JSON text
   */
  public static byte[] cloudEvent(String source, String id, String dataJson) {
    return utf8("{\"specversion\":\"1.0\",\"id\":" + quote(id) + ",\"source\":" + quote(source)
        + ",\"type\":\"com.example.OrderPaid\",\"datacontenttype\":\"application/json\","
        + "\"data\":" + dataJson + "}");
  }

  /** Two CloudEvents in batch mode (a JSON array). */
  public static byte[] cloudEventBatch(String source, String id1, String id2, String dataJson) {
    return utf8("[" + new String(cloudEvent(source, id1, dataJson), StandardCharsets.UTF_8) + ","
        + new String(cloudEvent(source, id2, dataJson), StandardCharsets.UTF_8) + "]");
  }

  /**
   * An EventBridge event as a rule target (SQS, Kafka via a connector) receives it.
   *
   * @param detailJson the producer's {@code Detail} as JSON text (an object)
   * @param attempt which {@code PutEvents} of the same event this is (1 for the first)
   */
  public static byte[] eventBridge(String detailType, String detailJson, int attempt) {
    return utf8("{\"version\":\"0\",\"id\":\"6a7e8feb-b491-4cf7-a9f1-" + String.format("%012d", attempt)
        + "\",\"detail-type\":" + quote(detailType) + ",\"source\":\"com.example.orders\","
        + "\"account\":\"123456789012\",\"time\":\"2026-12-01T08:00:" + String.format("%02d", attempt % 60)
        + "Z\",\"region\":\"eu-west-1\",\"resources\":[],\"detail\":" + detailJson + "}");
  }

  /** {@code text} as a JSON string literal. */
  public static String quote(String text) {
    StringBuilder out = new StringBuilder(text.length() + 2).append('"');
    for (char c : text.toCharArray()) {
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        default -> {
          if (c < 0x20) {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    return out.append('"').toString();
  }

  private static byte[] utf8(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }
}
