package io.idem.sqs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Map;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.core.SdkBytes;
import software.amazon.awssdk.services.sqs.model.Message;
import software.amazon.awssdk.services.sqs.model.MessageAttributeValue;
import software.amazon.awssdk.services.sqs.model.MessageSystemAttributeName;

class SqsInboundMessageTest {
  private static final Instant AT = Instant.parse("2025-01-01T00:00:00Z");

  @Test
  void mapsAttributesToHeaders() {
    Message message = Message.builder()
        .messageId("m-1")
        .receiptHandle("rh-1")
        .body("{\"a\":1}")
        .attributes(Map.of(MessageSystemAttributeName.APPROXIMATE_RECEIVE_COUNT, "3",
            MessageSystemAttributeName.MESSAGE_GROUP_ID, "g-1"))
        .messageAttributes(Map.of(
            "idempotency-key", string("String", "order-1"),
            "amount", string("Number", "12.50"),
            "label", string("String.custom", "x"),
            "empty", string(SqsInboundMessage.EMPTY_STRING_TYPE, "(empty)"),
            "utf8", binary("Zoë".getBytes(StandardCharsets.UTF_8)),
            "raw", binary(new byte[] {(byte) 0xff, (byte) 0xfe})))
        .build();

    SqsInboundMessage inbound = SqsInboundMessage.of("orders", message, AT);

    assertThat(inbound.headers()).containsOnly(
        Map.entry("idempotency-key", "order-1"), Map.entry("amount", "12.50"), Map.entry("label", "x"),
        Map.entry("empty", ""), Map.entry("utf8", "Zoë"));
    assertThat(inbound.undecodableHeaders()).containsExactly("raw");
    assertThat(inbound.payload()).isEqualTo("{\"a\":1}".getBytes(StandardCharsets.UTF_8));
    assertThat(inbound.brokerMessageId()).isEqualTo("m-1");
    assertThat(inbound.deliveryAttempt()).isEqualTo(3);
    assertThat(inbound.messageGroupId()).isEqualTo("g-1");
    assertThat(inbound.receiptHandle()).isEqualTo("rh-1");
    assertThat(inbound.source()).isEqualTo("orders");
    assertThat(inbound.receivedAt()).isEqualTo(AT);
    assertThat(inbound.unwrap(Message.class)).containsSame(message);
    assertThat(inbound.unwrap(String.class)).isEmpty();
  }

  @Test
  void attemptDefaultsToOneWithoutReceiveCount() {
    Message message = Message.builder().messageId("m").receiptHandle("r").body("x").build();
    assertThat(SqsInboundMessage.of("q", message, AT).deliveryAttempt()).isEqualTo(1);
    assertThat(SqsInboundMessage.of("q", message, AT).messageGroupId()).isNull();
  }

  @Test
  void binaryPayloadsRoundTripAsBase64() {
    byte[] payload = {0, 1, (byte) 0xff, 0x7f, (byte) 0x80};
    Map<String, MessageAttributeValue> attributes = SqsInboundMessage.messageAttributes(Map.of("k", "v"), payload);
    String body = SqsInboundMessage.messageBody(payload);
    assertThat(attributes).containsKey(SqsInboundMessage.BODY_ENCODING_ATTRIBUTE);

    SqsInboundMessage inbound = SqsInboundMessage.of("q",
        Message.builder().messageId("m").receiptHandle("r").body(body).messageAttributes(attributes).build(), AT);

    assertThat(inbound.payload()).containsExactly(payload);
    assertThat(inbound.header("k")).isEqualTo("v");
  }

  @Test
  void textPayloadsTravelAsTheyAre() {
    byte[] payload = "Zoë ✓ 日本".getBytes(StandardCharsets.UTF_8);
    assertThat(SqsInboundMessage.messageBody(payload)).isEqualTo("Zoë ✓ 日本");
    assertThat(SqsInboundMessage.messageAttributes(Map.of(), payload)).isEmpty();
    // a control character SQS refuses in a body forces Base64
    assertThat(SqsInboundMessage.messageAttributes(Map.of(), new byte[] {1}))
        .containsKey(SqsInboundMessage.BODY_ENCODING_ATTRIBUTE);
  }

  @Test
  void emptyHeaderValuesUseTheEmptyType() {
    MessageAttributeValue value = SqsInboundMessage.messageAttributes(Map.of("e", ""), new byte[] {'x'}).get("e");
    assertThat(value.dataType()).isEqualTo(SqsInboundMessage.EMPTY_STRING_TYPE);
    assertThat(value.stringValue()).isNotEmpty();
  }

  @Test
  void emptyPayloadIsRefused() {
    assertThatThrownBy(() -> SqsInboundMessage.messageBody(new byte[0]))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("must not be empty");
  }

  @Test
  void badBase64IsDeliveredAsText() {
    Message message = Message.builder().messageId("m").receiptHandle("r").body("not base64!")
        .messageAttributes(Map.of(SqsInboundMessage.BODY_ENCODING_ATTRIBUTE, string("String", "base64"))).build();
    assertThat(SqsInboundMessage.of("q", message, AT).payload())
        .isEqualTo("not base64!".getBytes(StandardCharsets.UTF_8));
  }

  private static MessageAttributeValue string(String type, String value) {
    return MessageAttributeValue.builder().dataType(type).stringValue(value).build();
  }

  private static MessageAttributeValue binary(byte[] value) {
    return MessageAttributeValue.builder().dataType("Binary").binaryValue(SdkBytes.fromByteArray(value)).build();
  }

  @Test
  void theKeyIsNamedAsAMessageAttribute() {
    Message keyless = Message.builder().messageId("m").receiptHandle("r").body("{}").build();
    Message blank = Message.builder().messageId("m").receiptHandle("r").body("{}").messageAttributes(Map.of(
        "idempotency-key", MessageAttributeValue.builder().dataType("String").stringValue(" ").build())).build();

    assertThat(((io.idem.KeyExtraction.Absent) io.idem.IdempotencyKeyExtractor.defaults()
        .extract(SqsInboundMessage.of("q", keyless, AT))).detail())
        .contains("no message attribute 'idempotency-key'")
        .contains("message attribute 'ce_id'")
        .doesNotContain("header");
    assertThat(((io.idem.KeyExtraction.Rejected) io.idem.IdempotencyKeyExtractor.defaults()
        .extract(SqsInboundMessage.of("q", blank, AT))).reason())
        .isEqualTo("message attribute 'idempotency-key' is present but blank");
  }

  @Test
  void theUnaccountedRedeliveryFlagIsSetByTheConsumerAndKeptAcrossAttempts() {
    Message message = Message.builder().messageId("m-1").receiptHandle("rh-1").body("{}")
        .attributes(Map.of(MessageSystemAttributeName.APPROXIMATE_RECEIVE_COUNT, "2")).build();
    SqsInboundMessage read = SqsInboundMessage.of("orders", message, AT);
    assertThat(read.unaccountedRedelivery()).as("as read").isFalse();

    SqsInboundMessage flagged = read.withUnaccountedRedelivery(true);
    assertThat(flagged.unaccountedRedelivery()).isTrue();
    assertThat(flagged.withDeliveryAttempt(3).unaccountedRedelivery()).as("an in-process retry").isTrue();
    assertThat(flagged.withDeliveryAttempt(3).deliveryAttempt()).isEqualTo(3);
    assertThat(flagged.toString()).contains("unaccountedRedelivery");
  }
}
