package io.idem;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** Each envelope shape of docs/KEYS.md, opened by its format, and what the key extractors then find. */
class EnvelopeFormatTest {
  private static final StringBuilder NATIVE = new StringBuilder("the native record");

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

  @Nested
  class Sns {
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
    void aNotificationWithoutItsMessageIsRejected() {
      String body = sns("m-1", "x", attributes, null).replace("\"Message\":\"x\",", "");
      assertThat(rejected(sns, delivery(body))).contains("SNS notification").contains("no Message");
      String objectMessage = sns("m-1", "x", attributes, null).replace("\"Message\":\"x\"", "\"Message\":{\"a\":1}");
      assertThat(rejected(sns, delivery(objectMessage))).contains("member 'Message' is a JSON object");
    }

    @Test
    void brokenNotificationsAreRejectedNotPassedOn() {
      assertThat(rejected(sns, delivery("{\"Type\":\"Notification\",\"TopicArn\":\"arn\",\"Message\":"))).contains("invalid JSON");
      assertThat(rejected(sns, delivery(sns("m-1", "x", "{\"k\":\"v\"}", null)))).contains("MessageAttributes 'k'");
      assertThat(rejected(sns, delivery(sns("m-1", "x", "{\"k\":{\"Type\":\"Binary\",\"Value\":\"%%\"}}", null))))
          .contains("not base64");
      assertThat(rejected(sns, delivery(sns("m-1", "x", null, null).replace("\"MessageId\":\"m-1\",", ""))))
          .contains("no MessageId");
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

  @Nested
  class CloudEventsStructured {
    private final EnvelopeFormat ce = EnvelopeFormat.cloudEventsStructured();
    private final String event = "{\"specversion\":\"1.0\",\"id\":\"A-1\",\"source\":\"/orders\","
        + "\"type\":\"com.example.OrderPaid\",\"time\":\"2026-12-01T08:00:00Z\",\"tenant\":\"eu\","
        + "\"sequence\":7,\"data\":{\"orderId\":42,\"amount\":12.50}}";

    @Test
    void theKeyIsSourceAndIdExactlyAsInBinaryMode() {
      InboundMessage opened = opened(ce, delivery(event, "content-type", "application/cloudevents+json"));
      KeyExtraction.Found key = found(IdempotencyKeyExtractor.defaults(), opened);
      assertThat(key.value()).isEqualTo("/orders A-1");
      assertThat(key.source()).isEqualTo(KeySource.CLOUDEVENTS);
      InboundMessage binary = delivery("{\"orderId\":42,\"amount\":12.50}",
          "ce_id", "A-1", "ce_source", "/orders", "ce_specversion", "1.0", "ce_type", "com.example.OrderPaid");
      assertThat(key.value()).isEqualTo(found(IdempotencyKeyExtractor.defaults(), binary).value());
      assertThat(opened.payload()).isEqualTo(binary.payload());
      assertThat(opened.headers()).containsEntry("ce_type", "com.example.OrderPaid")
          .containsEntry("ce_tenant", "eu").containsEntry("ce_sequence", "7")
          .doesNotContainKey("content-type");
      assertThat(opened.brokerMessageId()).isEqualTo("sqs-id-1");
      assertThat(opened.unwrap(StringBuilder.class)).containsSame(NATIVE);
    }

    @Test
    void contentTypeNamesAndValuesAreCaseInsensitiveAndMayCarryACharset() {
      for (String[] header : new String[][] {
          {"Content-Type", "application/cloudevents+json"},
          {"CONTENT-TYPE", "Application/CloudEvents+JSON; charset=UTF-8"},
          {"content-type", "application/cloudevents+json;charset=\"utf-8\""}}) {
        InboundMessage opened = opened(ce, delivery(event, header[0], header[1]));
        assertThat(found(IdempotencyKeyExtractor.defaults(), opened).value()).as(header[1]).isEqualTo("/orders A-1");
      }
      assertThat(rejected(ce, delivery(event, "content-type", "application/cloudevents+json; charset=ISO-8859-1")))
          .contains("charset 'ISO-8859-1'");
    }

    @Test
    void dataBase64IsDecodedAndDatacontenttypeBecomesTheContentType() {
      String body = "{\"specversion\":\"1.0\",\"id\":\"A-2\",\"source\":\"/orders\",\"type\":\"t\","
          + "\"datacontenttype\":\"application/octet-stream\",\"data_base64\":\""
          + Base64.getEncoder().encodeToString(new byte[] {0, 1, (byte) 0xFF}) + "\"}";
      InboundMessage opened = opened(ce, delivery(body, "content-type", "application/cloudevents+json"));
      assertThat(opened.payload()).containsExactly(0, 1, 0xFF);
      assertThat(opened.header("content-type")).isEqualTo("application/octet-stream");
    }

    @Test
    void stringDataIsItsTextUnlessTheDataIsJson() {
      String text = "{\"specversion\":\"1.0\",\"id\":\"A-3\",\"source\":\"/s\",\"type\":\"t\","
          + "\"datacontenttype\":\"text/plain\",\"data\":\"hello\"}";
      assertThat(text(opened(ce, delivery(text, "content-type", "application/cloudevents+json")))).isEqualTo("hello");
      String json = text.replace("text/plain", "application/json");
      assertThat(text(opened(ce, delivery(json, "content-type", "application/cloudevents+json")))).isEqualTo("\"hello\"");
      String none = text.replace(",\"data\":\"hello\"", "");
      assertThat(opened(ce, delivery(none, "content-type", "application/cloudevents+json")).payload()).isEmpty();
    }

    @Test
    void numbersInDataKeepTheirDigits() {
      String body = event.replace("12.50", "1.0000000000000001");
      assertThat(text(opened(ce, delivery(body, "content-type", "application/cloudevents+json"))))
          .isEqualTo("{\"orderId\":42,\"amount\":1.0000000000000001}");
    }

    @Test
    void withoutAContentTypeItIsRecognizedByShapeAsOnSqs() {
      InboundMessage opened = opened(ce, delivery(event));
      assertThat(found(IdempotencyKeyExtractor.defaults(), opened).value()).isEqualTo("/orders A-1");
      // a content type that is not CloudEvents: a plain JSON body (or binary mode), left alone
      assertThat(ce.unwrap(delivery(event, "content-type", "application/json")))
          .isInstanceOf(Unwrapping.NotRecognized.class);
      assertThat(ce.unwrap(delivery("{\"specversion\":\"1.0\",\"id\":\"x\"}")))
          .isInstanceOf(Unwrapping.NotRecognized.class);
    }

    @Test
    void theSameSourceChecksAsBinaryMode() {
      String spaced = event.replace("\"/orders\"", "\"urn:a b\"");
      InboundMessage opened = opened(ce, delivery(spaced, "content-type", "application/cloudevents+json"));
      assertThat(IdempotencyKeyExtractor.defaults().extract(opened)).isInstanceOf(KeyExtraction.Rejected.class);
      String blankId = event.replace("\"A-1\"", "\"  \"");
      assertThat(IdempotencyKeyExtractor.defaults()
          .extract(opened(ce, delivery(blankId, "content-type", "application/cloudevents+json"))))
          .isEqualTo(KeyExtraction.rejected("header 'ce_id' is present but blank"));
    }

    @Test
    void invalidStructuredEventsAreRejected() {
      String ct = "application/cloudevents+json";
      assertThat(rejected(ce, delivery("{\"specversion\":\"1.0\",", "content-type", ct))).contains("invalid JSON");
      assertThat(rejected(ce, delivery("[1]", "content-type", ct))).contains("not an object");
      assertThat(rejected(ce, delivery(event.replace("\"id\":\"A-1\",", ""), "content-type", ct))).contains("no 'id'");
      assertThat(rejected(ce, delivery(event.replace("\"A-1\"", "17"), "content-type", ct))).contains("'id' is a JSON number");
      assertThat(rejected(ce, delivery(event.replace("}}", "},\"data_base64\":\"AA==\"}"), "content-type", ct)))
          .contains("both 'data' and 'data_base64'");
      assertThat(rejected(ce, delivery(event.replace("\"eu\"", "{\"a\":1}"), "content-type", ct)))
          .contains("attribute 'tenant' is a JSON object");
      assertThat(rejected(ce, delivery(event, "content-type", "application/cloudevents+avro"))).contains("does not read");
    }

    @Test
    void batchModeIsRejectedWithTheReason() {
      String batch = "[" + event + "," + event.replace("A-1", "A-2") + "]";
      assertThat(rejected(ce, delivery(batch, "content-type", "application/cloudevents-batch+json")))
          .contains("batch mode").contains("one event per message");
    }
  }

  @Nested
  class EventBridge {
    private final EnvelopeFormat eventBridge = EnvelopeFormat.eventBridge();

    static String event(String id, String time) {
      return "{\"version\":\"0\",\"id\":\"" + id + "\",\"detail-type\":\"OrderPaid\","
          + "\"source\":\"com.example.orders\",\"account\":\"123456789012\",\"time\":\"" + time + "\","
          + "\"region\":\"eu-west-1\",\"resources\":[],\"detail\":{\"orderId\":\"o-42\",\"amount\":12.5}}";
    }

    @Test
    void theHandlerSeesTheDetailAndTheKeyIsABusinessIdInIt() {
      InboundMessage opened = opened(eventBridge, delivery(event("eb-1", "2026-12-01T08:00:00Z")));
      assertThat(text(opened)).isEqualTo("{\"orderId\":\"o-42\",\"amount\":12.5}");
      assertThat(found(IdempotencyKeyExtractor.jsonPointer("/orderId"), opened).value()).isEqualTo("o-42");
      assertThat(opened.headers()).containsEntry("eventbridge-id", "eb-1")
          .containsEntry("eventbridge-detail-type", "OrderPaid").containsEntry("eventbridge-source", "com.example.orders")
          .containsEntry("eventbridge-region", "eu-west-1");
    }

    @Test
    void aRePutHasANewIdAndTimeButTheSameDetail() {
      InboundMessage first = opened(eventBridge, delivery(event("eb-1", "2026-12-01T08:00:00Z")));
      InboundMessage rePut = opened(eventBridge, delivery(event("eb-2", "2026-12-01T08:00:05Z")));
      assertThat(rePut.payload()).isEqualTo(first.payload());
      assertThat(rePut.header("eventbridge-id")).isNotEqualTo(first.header("eventbridge-id"));
    }

    @Test
    void notPartOfTheStandardFormatsAndRejectedWithoutDetail() {
      assertThat(EnvelopeFormat.standard().unwrap(delivery(event("eb-1", "t"))))
          .isInstanceOf(Unwrapping.NotRecognized.class);
      String noDetail = event("eb-1", "t").replace(",\"detail\":{\"orderId\":\"o-42\",\"amount\":12.5}", "");
      assertThat(rejected(eventBridge, delivery(noDetail))).contains("'detail' is missing");
    }
  }

  /** Shapes that need no envelope: the key is one extractor away and the payload is the event. */
  @Nested
  class WithoutEnvelope {
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
}
