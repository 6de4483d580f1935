package io.idem;

import static io.idem.EnvelopeFormatTest.NATIVE;
import static io.idem.EnvelopeFormatTest.delivery;
import static io.idem.EnvelopeFormatTest.found;
import static io.idem.EnvelopeFormatTest.opened;
import static io.idem.EnvelopeFormatTest.rejected;
import static io.idem.EnvelopeFormatTest.text;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import org.junit.jupiter.api.Test;

/** {@link EnvelopeFormat#cloudEventsStructured()}: the key and payload of binary mode, by content type or by shape. */
class CloudEventsStructuredEnvelopeTest {
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

  /**
   * Review of issue 17: a CloudEvent whose {@code data} is CloudEvent-shaped (an audit or replay
   * event) is the outer event; only an explicit {@code datacontenttype} nests one.
   */
  @Test
  void dataThatLooksLikeACloudEventIsNotOpenedByShape() {
    String outer = "{\"specversion\":\"1.0\",\"id\":\"audit-9\",\"source\":\"/audit\",\"type\":\"Replayed\","
        + "\"data\":" + event + "}";
    for (InboundMessage delivery : new InboundMessage[] {
        delivery(outer), delivery(outer, "content-type", "application/cloudevents+json")}) {
      InboundMessage opened = opened(ce, delivery);
      assertThat(found(IdempotencyKeyExtractor.defaults(), opened).value()).isEqualTo("/audit audit-9");
      assertThat(ce.unwrap(opened)).isInstanceOf(Unwrapping.NotRecognized.class);
      assertThat(EnvelopeFormat.snsNotification().unwrap(opened(ce, delivery(outer.replace(event,
          EnvelopeFormatTest.sns("m-1", "x", null, null)))))).isInstanceOf(Unwrapping.NotRecognized.class);
    }
    String nested = outer.replace("\"data\":", "\"datacontenttype\":\"application/cloudevents+json\",\"data\":");
    InboundMessage inner = opened(ce, opened(ce, delivery(nested)));
    assertThat(found(IdempotencyKeyExtractor.defaults(), inner).value()).isEqualTo("/orders A-1");
  }

  /** Review of issue 17: without a content type only a valid 1.0 event is one; anything else is the body. */
  @Test
  void byShapeCandidatesThatAreNoValidCloudEventPassThrough() {
    String[] candidates = {
        event.replace("\"1.0\"", "\"3\""),
        event.replace("\"1.0\"", "\"0.3\""),
        event.replace("\"1.0\"", "1.0"),
        event.replace("\"com.example.OrderPaid\"", "7"),
        event.replace(",\"type\":\"com.example.OrderPaid\"", ""),
        event.replace("\"eu\"", "{\"name\":\"Ada\"}"),
        event.replace("}}", "},\"data_base64\":\"AA==\"}"),
        event.replace("}}", "},\"data_base64\":\"!!\"}").replace("\"data\":{\"orderId\":42,\"amount\":12.50},", ""),
        "{\"specversion\":\"2\",\"id\":\"c-1\",\"source\":\"crm\",\"type\":\"customer.updated\",\"name\":\"Ada\"}",
        "{\"specversion\":\"1.0\",\"id\":\"c-1\",\"source\":\"crm\",\"type\":\"t\" trailing"};
    for (String candidate : candidates) {
      assertThat(ce.unwrap(delivery(candidate))).as(candidate).isInstanceOf(Unwrapping.NotRecognized.class);
    }
    // the same object-valued attribute under a CloudEvents content type: claimed, so rejected
    assertThat(rejected(ce, delivery(candidates[5], "content-type", "application/cloudevents+json")))
        .contains("attribute 'tenant' is a JSON object");
  }

  @Test
  void usAsciiIsAcceptedAsTheUtf8SubsetItIs() {
    InboundMessage opened = opened(ce, delivery(event, "content-type", "application/cloudevents+json; charset=US-ASCII"));
    assertThat(found(IdempotencyKeyExtractor.defaults(), opened).value()).isEqualTo("/orders A-1");
  }

  /** Review of issue 17: JMS exposes its content_type property under both names; neither is the event's. */
  @Test
  void theEnvelopesJmsContentTypeIsNotPassedOn() {
    InboundMessage opened = opened(ce, delivery(event, "content_type", "application/cloudevents+json",
        "content-type", "application/cloudevents+json"));
    assertThat(opened.headers()).doesNotContainKeys("content_type", "content-type");
    String typed = event.replace("\"data\":", "\"datacontenttype\":\"application/json\",\"data\":");
    assertThat(opened(ce, delivery(typed, "content_type", "application/cloudevents+json")).headers())
        .containsEntry("content-type", "application/json").doesNotContainKey("content_type");
  }
}
