package io.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.AMQP;
import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import java.util.Map;
import org.junit.jupiter.api.Test;

class RabbitAcknowledgementTest {

  @Test
  void deadLetterCopyKeepsPropertiesAndHeadersAddsTheReasonAndIsPersistent() {
    AMQP.BasicProperties original = new AMQP.BasicProperties.Builder()
        .messageId("m-1")
        .contentType("application/json")
        .correlationId("c-1")
        .deliveryMode(1)
        .expiration("60000")
        .userId("someone")
        .headers(Map.of("idempotency-key", "k-1", "x-delivery-count", 2L))
        .build();
    DeadLetterReason reason =
        new DeadLetterReason(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED, "failed", "g", "k-1", 3, "java.lang.X");

    AMQP.BasicProperties copy = RabbitAcknowledgement.deadLetterProperties(original, reason);

    assertThat(copy.getMessageId()).isEqualTo("m-1");
    assertThat(copy.getContentType()).isEqualTo("application/json");
    assertThat(copy.getCorrelationId()).isEqualTo("c-1");
    assertThat(copy.getDeliveryMode()).isEqualTo(2);
    assertThat(copy.getExpiration()).isNull();
    assertThat(copy.getUserId()).isNull();
    assertThat(copy.getHeaders())
        .containsEntry("idempotency-key", "k-1")
        .containsEntry(DeadLetterReason.HEADER_CAUSE, "MAX_ATTEMPTS_EXCEEDED")
        .containsEntry(DeadLetterReason.HEADER_ATTEMPT, "3")
        .doesNotContainKey("x-delivery-count");
  }
}
