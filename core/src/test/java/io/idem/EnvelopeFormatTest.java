package io.idem;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import org.junit.jupiter.api.Test;

/**
 * Helpers for the tests of each envelope shape ({@code SnsEnvelopeTest}, {@code
 * CloudEventsStructuredEnvelopeTest}, {@code EventBridgeEnvelopeTest}), and the shapes of
 * docs/KEYS.md that need no envelope.
 */
class EnvelopeFormatTest {
  static final StringBuilder NATIVE = new StringBuilder("the native record");

  static InboundMessage delivery(String body, String... headers) {
    InboundMessage.Builder b = InboundMessage.builder("orders", body.getBytes(StandardCharsets.UTF_8))
        .brokerMessageId("sqs-id-1").deliveryAttempt(2).nativeMessage(NATIVE);
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    return b.build();
  }

  static InboundMessage opened(EnvelopeFormat format, InboundMessage delivery) {
    Unwrapping result = format.unwrap(delivery);
    assertThat(result).isInstanceOf(Unwrapping.Unwrapped.class);
    return ((Unwrapping.Unwrapped) result).message();
  }

  static String rejected(EnvelopeFormat format, InboundMessage delivery) {
    Unwrapping result = format.unwrap(delivery);
    assertThat(result).isInstanceOf(Unwrapping.Rejected.class);
    return ((Unwrapping.Rejected) result).reason();
  }

  static String text(InboundMessage message) {
    return new String(message.payload(), StandardCharsets.UTF_8);
  }

  static KeyExtraction.Found found(IdempotencyKeyExtractor keys, InboundMessage message) {
    KeyExtraction key = keys.extract(message);
    assertThat(key).isInstanceOf(KeyExtraction.Found.class);
    return (KeyExtraction.Found) key;
  }

  /** An SNS notification as SNS delivers it to SQS without raw message delivery. */
  static String sns(String messageId, String message, String attributes, String subject) {
    return "{\"Type\":\"Notification\",\"MessageId\":\"" + messageId + "\","
        + "\"TopicArn\":\"arn:aws:sns:eu-west-1:123456789012:orders\","
        + (subject == null ? "" : "\"Subject\":\"" + subject + "\",")
        + "\"Message\":" + quote(message) + ","
        + "\"Timestamp\":\"2026-12-01T08:00:0" + messageId.length() % 10 + ".000Z\","
        + "\"SignatureVersion\":\"1\",\"Signature\":\"sig-" + messageId + "\","
        + "\"SigningCertURL\":\"https://sns.eu-west-1.amazonaws.com/cert.pem\","
        + "\"UnsubscribeURL\":\"https://sns.eu-west-1.amazonaws.com/?Action=Unsubscribe\""
        + (attributes == null ? "" : ",\"MessageAttributes\":" + attributes) + "}";
  }

  static String quote(String text) {
    return "\"" + text.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }

  // shapes that need no envelope: the key is one extractor away and the payload is the event
  @Test
  void debeziumOutboxEventIdIsTheHeaderNamedId() {
    // the outbox event router: value = the payload column, header "id" = the outbox row's id
    InboundMessage record = delivery("{\"orderId\":42}", "id", "4f6a0d2e-8c1b-4c39-9e0c-3d4b2a1f0e11");
    assertThat(EnvelopeFormat.standard().unwrap(record)).isInstanceOf(Unwrapping.NotRecognized.class);
    KeyExtraction.Found key = found(IdempotencyKeyExtractor.header("id"), record);
    assertThat(key.value()).isEqualTo("4f6a0d2e-8c1b-4c39-9e0c-3d4b2a1f0e11");
    assertThat(key.source()).isEqualTo(KeySource.HEADER);
  }

  @Test
  void aWebhookEventIdIsTheTopLevelId() {
    InboundMessage webhook = delivery("{\"id\":\"evt_1Nq\",\"object\":\"event\",\"type\":\"payment_intent.succeeded\","
        + "\"data\":{\"object\":{\"id\":\"pi_3\",\"amount\":2000}}}");
    assertThat(EnvelopeFormat.standard().unwrap(webhook)).isInstanceOf(Unwrapping.NotRecognized.class);
    KeyExtraction.Found key = found(IdempotencyKeyExtractor.jsonPointer("/id"), webhook);
    assertThat(key.value()).isEqualTo("evt_1Nq");
    assertThat(key.source()).isEqualTo(KeySource.PAYLOAD);
  }
}
