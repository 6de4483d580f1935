package io.idem.jms;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.idem.DeadLetterReason;
import io.idem.IdempotencyKeyExtractor;
import org.junit.jupiter.api.Test;

class JmsHeaderNamesTest {

  @Test
  void defaultKeyHeaderMapsToTheDefaultKeyProperty() {
    assertThat(JmsHeaderNames.toPropertyName(IdempotencyKeyExtractor.DEFAULT_HEADER))
        .isEqualTo(JmsHeaderNames.DEFAULT_KEY_PROPERTY)
        .isEqualTo("idempotency_key");
    assertThat(JmsHeaderNames.toHeaderName("idempotency_key")).isEqualTo("idempotency-key");
  }

  @Test
  void everyDeadLetterReasonHeaderIsAValidPropertyName() {
    for (String header : new DeadLetterReason(io.idem.DeadLetterCause.NO_KEY, "d", "g", "k", 1, "E")
        .toHeaders().keySet()) {
      assertThat(JmsHeaderNames.isValidPropertyName(JmsHeaderNames.toPropertyName(header))).as(header).isTrue();
    }
  }

  @Test
  void reservedAndProviderNamesGetNoAlias() {
    assertThat(JmsHeaderNames.toHeaderName("JMSX_whatever")).isEqualTo("JMSX_whatever");
    assertThat(JmsHeaderNames.toHeaderName("_AMQ_DUPL_ID")).isEqualTo("_AMQ_DUPL_ID");
    assertThat(JmsHeaderNames.toHeaderName("plain")).isEqualTo("plain");
  }

  @Test
  void namesThatCannotBecomePropertiesAreRefused() {
    assertThatThrownBy(() -> JmsHeaderNames.toPropertyName("cloudEvents:id"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("cloudEvents:id");
    assertThatThrownBy(() -> JmsHeaderNames.toPropertyName("1st")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> JmsHeaderNames.toPropertyName("between")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> JmsHeaderNames.toPropertyName("")).isInstanceOf(IllegalArgumentException.class);
    assertThat(JmsHeaderNames.toPropertyName("ce-id")).isEqualTo("ce_id");
    assertThat(JmsHeaderNames.toPropertyName("ünï")).isEqualTo("ünï");
  }
}
