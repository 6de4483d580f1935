package io.idem.sqs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import io.idem.IdempotencyException;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.sqs.model.MessageAttributeValue;

class DeadLetterAttributesTest {
  private static final DeadLetterReason REASON = new DeadLetterReason(
      DeadLetterCause.MAX_ATTEMPTS_EXCEEDED, "handler failed", "billing", "order-1", 5, "java.lang.IllegalStateException");

  @Test
  void keepsEverythingWhenItFits() {
    Map<String, MessageAttributeValue> original = Map.of("idempotency-key", text("order-1"), "x-trace", text("t"));
    Map<String, MessageAttributeValue> copy = DeadLetterAttributes.of(original, REASON, "{}");
    assertThat(copy).hasSize(8).containsKeys("idempotency-key", "x-trace", DeadLetterReason.HEADER_CAUSE)
        .doesNotContainKey(DeadLetterAttributes.DROPPED_ATTRIBUTE);
    assertThat(copy.get(DeadLetterReason.HEADER_ATTEMPT).stringValue()).isEqualTo("5");
  }

  @Test
  void dropsTheLeastImportantOriginalsAndNamesThem() {
    Map<String, MessageAttributeValue> original = new LinkedHashMap<>();
    original.put("z-last", text("1"));
    original.put("a-first", text("1"));
    original.put("ce_id", text("1"));
    original.put("idempotency-key", text("order-1"));
    original.put(SqsInboundMessage.BODY_ENCODING_ATTRIBUTE, text("base64"));
    original.put("m-middle", text("1"));

    Map<String, MessageAttributeValue> copy = DeadLetterAttributes.of(original, REASON, "{}");

    assertThat(copy).hasSize(DeadLetterAttributes.MAX_ATTRIBUTES);
    assertThat(copy).containsKeys(SqsInboundMessage.BODY_ENCODING_ATTRIBUTE, "idempotency-key", "ce_id");
    assertThat(copy.get(DeadLetterAttributes.DROPPED_ATTRIBUTE).stringValue()).isEqualTo("a-first,m-middle,z-last");
    assertThat(copy.keySet()).containsAll(REASON.toHeaders().keySet());
  }

  @Test
  void aHugeBodyShortensTheReasonButKeepsTheCause() {
    String body = "x".repeat(DeadLetterAttributes.MAX_MESSAGE_BYTES - 300);
    DeadLetterReason reason = new DeadLetterReason(
        DeadLetterCause.NON_RETRYABLE, "d".repeat(900), "billing", "order-1", 1, "java.lang.IllegalStateException");
    Map<String, MessageAttributeValue> copy =
        DeadLetterAttributes.of(Map.of("idempotency-key", text("order-1")), reason, body);

    assertThat(body.length() + DeadLetterAttributes.size(copy)).isLessThanOrEqualTo(DeadLetterAttributes.MAX_MESSAGE_BYTES);
    assertThat(copy.get(DeadLetterReason.HEADER_CAUSE).stringValue()).isEqualTo("NON_RETRYABLE");
    assertThat(copy.get(DeadLetterReason.HEADER_CONSUMER_GROUP).stringValue()).isEqualTo("billing");
    assertThat(copy.get(DeadLetterReason.HEADER_DETAIL).stringValue()).endsWith("…").hasSizeLessThan(300);
  }

  @Test
  void aBodyLeavingNoRoomAtAllIsRefused() {
    String body = "x".repeat(DeadLetterAttributes.MAX_MESSAGE_BYTES - 10);
    assertThatThrownBy(() -> DeadLetterAttributes.of(Map.of(), REASON, body))
        .isInstanceOf(IdempotencyException.class)
        .hasMessageContaining("leaves no room");
  }

  @Test
  void theDeadLetterQueuesMaximumMessageSizeIsTheLimit() {
    String body = "x".repeat(DeadLetterAttributes.MAX_MESSAGE_BYTES + 1000); // over 256 KiB
    Map<String, MessageAttributeValue> copy =
        DeadLetterAttributes.of(Map.of("idempotency-key", text("order-1")), REASON, body, 1_048_576);
    assertThat(copy.get(DeadLetterReason.HEADER_DETAIL).stringValue()).isEqualTo("handler failed");
    assertThat(copy).containsKey("idempotency-key");
  }

  @Test
  void reasonTextIsMadeAcceptableToSqs() {
    assertThat(DeadLetterAttributes.sqsText("ok \t\n\r é 😀")).isEqualTo("ok \t\n\r é 😀");
    assertThat(DeadLetterAttributes.sqsText("a\u0000b\u001Fc\uFFFEd\uFFFF")).isEqualTo("a\uFFFDb\uFFFDc\uFFFDd\uFFFD");
    // halves of a surrogate pair, e.g. the core cutting a 1000-char detail between them
    assertThat(DeadLetterAttributes.sqsText("x\uD83D")).isEqualTo("x\uFFFD");
    assertThat(DeadLetterAttributes.sqsText("\uDE00y")).isEqualTo("\uFFFDy");
  }

  @Test
  void aDetailThatWouldBeCutInsideASurrogatePairIsSentWithoutAHalfPair() {
    String detail = "d".repeat(DeadLetterReason.MAX_DETAIL_LENGTH - 1) + "😀tail"; // pair at 999-1000
    DeadLetterReason reason = new DeadLetterReason(DeadLetterCause.NON_RETRYABLE, detail, "billing", "k", 1, null);
    Map<String, MessageAttributeValue> copy = DeadLetterAttributes.of(Map.of(), reason, "{}");
    String sent = copy.get(DeadLetterReason.HEADER_DETAIL).stringValue();
    // the core no longer cuts inside the pair; the text SQS gets has no half pair either way
    assertThat(sent).endsWith("d…").doesNotContain("\uD83D").doesNotContain("\uFFFD");
  }

  @Test
  void aShortenedDetailIsNeverCutInsideASurrogatePair() {
    String body = "x".repeat(DeadLetterAttributes.MAX_MESSAGE_BYTES - 200);
    DeadLetterReason reason = new DeadLetterReason(
        DeadLetterCause.NON_RETRYABLE, "😀".repeat(400), "billing", "order-1", 1, "java.lang.IllegalStateException");
    String detail = DeadLetterAttributes.of(Map.of(), reason, body).get(DeadLetterReason.HEADER_DETAIL).stringValue();
    assertThat(DeadLetterAttributes.sqsText(detail)).isEqualTo(detail);
    assertThat(detail).endsWith("…");
  }

  private static MessageAttributeValue text(String value) {
    return MessageAttributeValue.builder().dataType("String").stringValue(value).build();
  }
}
