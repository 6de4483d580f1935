package io.idem;

import static io.idem.EnvelopeFormatTest.NATIVE;
import static io.idem.EnvelopeFormatTest.delivery;
import static io.idem.EnvelopeFormatTest.found;
import static io.idem.EnvelopeFormatTest.opened;
import static io.idem.EnvelopeFormatTest.rejected;
import static io.idem.EnvelopeFormatTest.sns;
import static io.idem.EnvelopeFormatTest.text;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import org.junit.jupiter.api.Test;

/** {@link EnvelopeFormat#snsNotification()}: SNS notifications delivered to SQS without raw message delivery. */
class SnsEnvelopeTest {
  private final EnvelopeFormat sns = EnvelopeFormat.snsNotification();
  private final String attributes =
      "{\"idempotency-key\":{\"Type\":\"String\",\"Value\":\"order-42\"},"
          + "\"amount\":{\"Type\":\"Number\",\"Value\":\"12.50\"}}";

  @Test
  void theHandlerSeesTheProducersMessageAndTheKeyIsItsAttribute() {
    InboundMessage event = opened(sns, delivery(sns("m-1", "{\"orderId\":42}", attributes, null)));
    assertThat(text(event)).isEqualTo("{\"orderId\":42}");
    assertThat(event.headers()).containsEntry("idempotency-key", "order-42").containsEntry("amount", "12.50")
        .containsEntry("sns-message-id", "m-1")
        .containsEntry("sns-topic-arn", "arn:aws:sns:eu-west-1:123456789012:orders")
        .containsKey("sns-timestamp").doesNotContainKey("sns-subject");
    assertThat(found(IdempotencyKeyExtractor.defaults(), event).value()).isEqualTo("order-42");
    // the delivery's own: the SQS MessageId, the attempt, the native record
    assertThat(event.brokerMessageId()).isEqualTo("sqs-id-1");
    assertThat(event.deliveryAttempt()).isEqualTo(2);
    assertThat(event.source()).isEqualTo("orders");
    assertThat(event.unwrap(StringBuilder.class)).containsSame(NATIVE);
  }

  @Test
  void aProducerRetryHasNewSnsIdsButTheSameEvent() {
    InboundMessage first = opened(sns, delivery(sns("m-1", "{\"orderId\":42}", attributes, null)));
    InboundMessage retry = opened(sns, delivery(sns("m-222", "{\"orderId\":42}", attributes, null)));
    assertThat(retry.payload()).isEqualTo(first.payload());
    assertThat(retry.header("idempotency-key")).isEqualTo(first.header("idempotency-key"));
    assertThat(retry.header("sns-message-id")).isNotEqualTo(first.header("sns-message-id"));
  }

  @Test
  void withoutAttributesTheKeyComesFromTheInnerMessage() {
    InboundMessage event = opened(sns, delivery(sns("m-1", "{\"orderId\":42}", null, null)));
    assertThat(IdempotencyKeyExtractor.defaults().extract(event)).isInstanceOf(KeyExtraction.Absent.class);
    assertThat(found(IdempotencyKeyExtractor.jsonPointer("/orderId"), event).value()).isEqualTo("42");
  }

  @Test
  void binaryAttributesAreDecodedAsUtf8OrListedUndecodable() {
    String good = Base64.getEncoder().encodeToString("order-ü".getBytes(StandardCharsets.UTF_8));
    String bad = Base64.getEncoder().encodeToString(new byte[] {'k', (byte) 0xC3, (byte) 0x28});
    InboundMessage event = opened(sns, delivery(sns("m-1", "x",
        "{\"idempotency-key\":{\"Type\":\"Binary\",\"Value\":\"" + good + "\"},"
            + "\"raw\":{\"Type\":\"Binary\",\"Value\":\"" + bad + "\"}}", null)));
    assertThat(event.header("idempotency-key")).isEqualTo("order-ü");
    assertThat(event.undecodableHeaders()).containsExactly("raw");
    assertThat(IdempotencyKeyExtractor.header("raw").extract(event))
        .isEqualTo(KeyExtraction.rejected("header 'raw' is not valid UTF-8"));
  }

  @Test
  void theSubjectIsAHeader() {
    InboundMessage event = opened(sns, delivery(sns("m-1", "body", attributes, "Order paid")));
    assertThat(event.header("sns-subject")).isEqualTo("Order paid");
    assertThat(text(event)).isEqualTo("body");
  }

  @Test
  void attributesReplaceTheDeliverysHeadersOfTheSameName() {
    InboundMessage event = opened(sns,
        delivery(sns("m-1", "body", attributes, null), "idempotency-key", "outer", "other", "kept"));
    assertThat(event.headers()).containsEntry("idempotency-key", "order-42").containsEntry("other", "kept");
  }

  @Test
  void aNotificationWhoseMessageIsNoStringIsRejected() {
    String objectMessage = sns("m-1", "x", attributes, null).replace("\"Message\":\"x\"", "\"Message\":{\"a\":1}");
    assertThat(rejected(sns, delivery(objectMessage))).contains("member 'Message' is a JSON object");
    String numberTimestamp = sns("m-1", "x", attributes, null).replaceFirst("\"Timestamp\":\"[^\"]*\"", "\"Timestamp\":1");
    assertThat(rejected(sns, delivery(numberTimestamp))).contains("member 'Timestamp' is a JSON number");
  }

  /** Review of issue 17: a JSON body without every field SNS always sends is the producer's, not SNS's. */
  @Test
  void aBodyMissingAnyFieldEveryNotificationCarriesIsNotAnEnvelope() {
    String full = sns("m-1", "x", attributes, null);
    assertThat(sns.unwrap(delivery(full))).isInstanceOf(Unwrapping.Unwrapped.class);
    for (String field : new String[] {"MessageId", "TopicArn", "Message", "Timestamp"}) {
      String without = full.replaceFirst("\"" + field + "\":\"[^\"]*\",", "");
      assertThat(without).as(field).doesNotContain("\"" + field + "\":");
      assertThat(sns.unwrap(delivery(without))).as("without " + field).isInstanceOf(Unwrapping.NotRecognized.class);
      String nulled = full.replaceFirst("\"" + field + "\":\"[^\"]*\"", "\"" + field + "\":null");
      assertThat(sns.unwrap(delivery(nulled))).as(field + " null").isInstanceOf(Unwrapping.NotRecognized.class);
    }
    // a notification service's own command: Type Notification and a TopicArn, nothing else of SNS
    String command = "{\"requestId\":\"r-1\",\"Type\":\"Notification\",\"TopicArn\":\"arn:aws:sns:eu-west-1:1:alerts\","
        + "\"Subject\":\"Disk full\",\"Message\":{\"host\":\"h-7\"}}";
    assertThat(sns.unwrap(delivery(command))).isInstanceOf(Unwrapping.NotRecognized.class);
  }

  @Test
  void brokenNotificationsAreRejectedNotPassedOn() {
    assertThat(rejected(sns, delivery("{\"Type\":\"Notification\",\"MessageId\":\"m\",\"TopicArn\":\"arn\","
        + "\"Timestamp\":\"t\",\"Message\":"))).contains("invalid JSON");
    assertThat(rejected(sns, delivery(sns("m-1", "x", "{\"k\":\"v\"}", null)))).contains("MessageAttributes 'k'");
    assertThat(rejected(sns, delivery(sns("m-1", "x", "{\"k\":{\"Type\":\"Binary\",\"Value\":\"%%\"}}", null))))
        .contains("not base64");
    assertThat(rejected(sns, delivery(sns(" ", "x", null, null)))).contains("no MessageId");
    String twice = sns("m-1", "x", null, null).replace("\"Message\":\"x\"", "\"Message\":\"x\",\"Message\":\"y\"");
    assertThat(rejected(sns, delivery(twice))).contains("Duplicate field 'Message'");
  }

  @Test
  void otherShapesAreNotRecognized() {
    assertThat(sns.unwrap(delivery("{\"orderId\":42}"))).isInstanceOf(Unwrapping.NotRecognized.class);
    assertThat(sns.unwrap(delivery("not json, says \"TopicArn\" and \"Notification\"")))
        .isInstanceOf(Unwrapping.NotRecognized.class);
    String confirmation = sns("m-1", "x", null, null).replace("\"Notification\"", "\"SubscriptionConfirmation\"");
    assertThat(sns.unwrap(delivery(confirmation + " \"Notification\""))).isInstanceOf(Unwrapping.Rejected.class);
    assertThat(sns.unwrap(delivery(confirmation.replace("}", ",\"x\":\"Notification\"}"))))
        .isInstanceOf(Unwrapping.NotRecognized.class);
  }
}
