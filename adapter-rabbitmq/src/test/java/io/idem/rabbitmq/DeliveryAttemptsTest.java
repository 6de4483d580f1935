package io.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Envelope;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;

class DeliveryAttemptsTest {
  private static final byte[] BODY = "{}".getBytes(StandardCharsets.UTF_8);

  private static Envelope envelope(boolean redelivered) {
    return new Envelope(1, redelivered, "", "q");
  }

  private static AMQP.BasicProperties props(String messageId, Map<String, Object> headers) {
    return new AMQP.BasicProperties.Builder().messageId(messageId).headers(headers).build();
  }

  @Test
  void quorumQueuesCountInXDeliveryCount() {
    DeliveryAttempts attempts = new DeliveryAttempts(10);
    assertThat(attempts.attemptOf(envelope(false), props("m", Map.of("x-delivery-count", 0L)), BODY)).isEqualTo(1);
    assertThat(attempts.attemptOf(envelope(true), props("m", Map.of("x-delivery-count", 4L)), BODY)).isEqualTo(5);
    assertThat(attempts.tracked()).isZero();
  }

  @Test
  void classicQueuesAreCountedPerMessageAndStartAgainWhenNotRedelivered() {
    DeliveryAttempts attempts = new DeliveryAttempts(10);
    AMQP.BasicProperties m = props("m", Map.of());
    assertThat(attempts.attemptOf(envelope(false), m, BODY)).isEqualTo(1);
    assertThat(attempts.attemptOf(envelope(true), m, BODY)).isEqualTo(2);
    assertThat(attempts.attemptOf(envelope(true), m, BODY)).isEqualTo(3);
    // another message id is another message
    assertThat(attempts.attemptOf(envelope(true), props("other", Map.of()), BODY)).isEqualTo(2);
    attempts.forget(m, BODY);
    // unknown but flagged redelivered: at least the second delivery
    assertThat(attempts.attemptOf(envelope(true), m, BODY)).isEqualTo(2);
    assertThat(attempts.attemptOf(envelope(false), m, BODY)).isEqualTo(1);
  }

  @Test
  void trackingIsBounded() {
    DeliveryAttempts attempts = new DeliveryAttempts(3);
    for (int i = 0; i < 10; i++) {
      attempts.attemptOf(envelope(false), props("m-" + i, Map.of()), BODY);
    }
    assertThat(attempts.tracked()).isEqualTo(3);
  }
}
