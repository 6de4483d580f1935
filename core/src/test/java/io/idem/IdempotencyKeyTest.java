package io.idem;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.junit.jupiter.api.Test;

class IdempotencyKeyTest {

  @Test
  void limits() {
    assertThat(new IdempotencyKey("g", "k".repeat(IdempotencyKey.MAX_LENGTH), KeySource.HEADER).value())
        .hasSize(512);
    assertThatThrownBy(() -> new IdempotencyKey("g", "k".repeat(513), KeySource.HEADER))
        .hasMessage("idempotency key must be at most 512 characters, but was 513");
    assertThatThrownBy(() -> new IdempotencyKey("g", "a\0b", KeySource.HEADER))
        .hasMessageContaining("NUL");
    assertThatThrownBy(() -> new IdempotencyKey("g", "K\uD800", KeySource.HEADER))
        .hasMessageContaining("unpaired surrogate U+D800");
    assertThatThrownBy(() -> new IdempotencyKey("g", "\uDC00K", KeySource.HEADER))
        .hasMessageContaining("unpaired surrogate U+DC00");
    assertThat(new IdempotencyKey("g", "emoji \uD83D\uDE00", KeySource.HEADER).value()).endsWith("\uD83D\uDE00");
    assertThatThrownBy(() -> new IdempotencyKey(" ", "k", KeySource.HEADER))
        .hasMessageContaining("consumerGroup must not be blank");
    assertThatThrownBy(() -> new IdempotencyKey("g".repeat(129), "k", KeySource.HEADER))
        .hasMessageContaining("consumerGroup must be at most 128");
  }

  @Test
  void consumerGroupsDifferingOnlyInUnpairedSurrogatesAreRejectedNotMerged() {
    assertThatThrownBy(() -> new IdempotencyKey("billing\uD800", "k", KeySource.HEADER))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("consumerGroup must be valid Unicode, but has an unpaired surrogate U+D800 at index 7");
    assertThatThrownBy(() -> new IdempotencyKey("billing\uDBFF", "k", KeySource.HEADER))
        .hasMessage("consumerGroup must be valid Unicode, but has an unpaired surrogate U+DBFF at index 7");
    assertThatThrownBy(() -> new IdempotencyKey("\uDC00billing", "k", KeySource.HEADER))
        .hasMessageContaining("unpaired surrogate U+DC00 at index 0");
    assertThat(new IdempotencyKey("billing-\uD83D\uDE00", "k", KeySource.HEADER).consumerGroup())
        .endsWith("\uD83D\uDE00");
  }

  @Test
  void consumerGroupWithNulOrControlCharactersIsRejected() {
    assertThatThrownBy(() -> new IdempotencyKey("billing\0", "k", KeySource.HEADER))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("consumerGroup must not contain the NUL character (U+0000)");
    assertThatThrownBy(() -> new IdempotencyKey("bill\ning", "k", KeySource.HEADER))
        .hasMessage("consumerGroup must not contain control characters, but has U+000A at index 4");
    assertThatThrownBy(() -> new IdempotencyKey("billing\u009F", "k", KeySource.HEADER))
        .hasMessage("consumerGroup must not contain control characters, but has U+009F at index 7");
    assertThat(new IdempotencyKey("g".repeat(IdempotencyKey.MAX_CONSUMER_GROUP_LENGTH), "k", KeySource.HEADER))
        .isNotNull();
  }

  @Test
  void deadLetterReasonHeaders() {
    DeadLetterReason reason = new DeadLetterReason(
        DeadLetterCause.MAX_ATTEMPTS_EXCEEDED, "x".repeat(2000), "g", "k", 5, "java.lang.IllegalStateException");
    Map<String, String> headers = reason.toHeaders();
    assertThat(headers).containsEntry(DeadLetterReason.HEADER_CAUSE, "MAX_ATTEMPTS_EXCEEDED")
        .containsEntry(DeadLetterReason.HEADER_CONSUMER_GROUP, "g")
        .containsEntry(DeadLetterReason.HEADER_KEY, "k")
        .containsEntry(DeadLetterReason.HEADER_ATTEMPT, "5")
        .containsEntry(DeadLetterReason.HEADER_EXCEPTION, "java.lang.IllegalStateException");
    assertThat(headers.get(DeadLetterReason.HEADER_DETAIL)).hasSize(DeadLetterReason.MAX_DETAIL_LENGTH + 1);
    assertThat(new DeadLetterReason(DeadLetterCause.NO_KEY, "none", "g", null, 1, null).toHeaders())
        .doesNotContainKeys(DeadLetterReason.HEADER_KEY, DeadLetterReason.HEADER_EXCEPTION);
  }
}
