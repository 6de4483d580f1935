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

  /** Idem's failure path on any version: the attempt moves even when the counter does not. */
  @Test
  void aHandlerFailureAlwaysMovesTheAttemptEvenWhenTheCounterStays() {
    DeliveryAttempts attempts = new DeliveryAttempts(10);
    AMQP.BasicProperties constant = props("m", Map.of("x-delivery-count", 0L));
    int first = attempts.attemptOf(envelope(false), constant, BODY);
    assertThat(first).isEqualTo(1);
    attempts.failed(constant, BODY, first);
    int second = attempts.attemptOf(envelope(true), constant, BODY);
    assertThat(second).isEqualTo(2);
    attempts.failed(constant, BODY, second);
    assertThat(attempts.attemptOf(envelope(true), constant, BODY)).isEqualTo(3);
  }

  /** RabbitMQ 3.x / 4.0–4.2: every return raises x-delivery-count, a reject as well as a nack. */
  @Test
  void before43EveryReturnCountsButAHandBackIsNotAnAttempt() {
    DeliveryAttempts attempts = new DeliveryAttempts(10);
    int a = attempts.attemptOf(envelope(false), props("m", Map.of("x-delivery-count", 0L)), BODY);
    attempts.failed(props("m", Map.of("x-delivery-count", 0L)), BODY, a); // reject: 0 -> 1
    a = attempts.attemptOf(envelope(true), props("m", Map.of("x-delivery-count", 1L)), BODY);
    assertThat(a).isEqualTo(2);
    attempts.handedBack(props("m", Map.of("x-delivery-count", 1L)), BODY, a); // maxHold nack: 1 -> 2
    a = attempts.attemptOf(envelope(true), props("m", Map.of("x-delivery-count", 2L)), BODY);
    assertThat(a).as("a hand-back is not an attempt").isEqualTo(2);
    attempts.handedBack(props("m", Map.of("x-delivery-count", 2L)), BODY, a); // 2 -> 3
    assertThat(attempts.attemptOf(envelope(true), props("m", Map.of("x-delivery-count", 3L)), BODY))
        .isEqualTo(2);
    // a lost channel (no end recorded) counts as the broker does
    assertThat(attempts.attemptOf(envelope(true), props("m", Map.of("x-delivery-count", 4L)), BODY))
        .isEqualTo(3);
  }

  /**
   * RabbitMQ 4.3+: a first delivery carries no counter; basic.reject raises x-delivery-count,
   * basic.nack(requeue) raises only x-acquired-count, which counts every hand-out.
   */
  @Test
  void from43OnlyRejectsMoveTheDeliveryCountAndAcquiredCountMovesOnEveryHandOut() {
    DeliveryAttempts attempts = new DeliveryAttempts(10);
    AMQP.BasicProperties first = props("m", Map.of());
    int a = attempts.attemptOf(envelope(false), first, BODY);
    assertThat(a).isEqualTo(1);
    attempts.handedBack(first, BODY, a); // nack: x-delivery-count stays absent, x-acquired-count 1
    a = attempts.attemptOf(envelope(true), props("m", Map.of("x-acquired-count", 1L)), BODY);
    assertThat(a).as("a nack is not an attempt").isEqualTo(1);
    attempts.failed(props("m", Map.of("x-acquired-count", 1L)), BODY, a); // reject: both move
    a = attempts.attemptOf(envelope(true), props("m", Map.of("x-delivery-count", 1L, "x-acquired-count", 2L)), BODY);
    assertThat(a).isEqualTo(2);
    attempts.failed(props("m", Map.of("x-delivery-count", 1L, "x-acquired-count", 2L)), BODY, a);
    a = attempts.attemptOf(envelope(true), props("m", Map.of("x-delivery-count", 2L, "x-acquired-count", 3L)), BODY);
    assertThat(a).isEqualTo(3);
    // a shutdown nack of attempt 3 leaves x-delivery-count at 2: not looping, not counted
    attempts.handedBack(props("m", Map.of("x-delivery-count", 2L, "x-acquired-count", 3L)), BODY, a);
    assertThat(attempts.attemptOf(envelope(true), props("m", Map.of("x-delivery-count", 2L, "x-acquired-count", 4L)), BODY))
        .isEqualTo(3);
  }

  /** Another instance, or a restart: nothing remembered, the broker's counter decides. */
  @Test
  void unknownMessagesTakeTheBrokerCounter() {
    DeliveryAttempts attempts = new DeliveryAttempts(10);
    assertThat(attempts.attemptOf(envelope(true), props("a", Map.of("x-acquired-count", 3L)), BODY)).isEqualTo(4);
    assertThat(attempts.attemptOf(envelope(true), props("b", Map.of("x-delivery-count", 2L, "x-acquired-count", 7L)), BODY))
        .isEqualTo(3);
  }

  @Test
  void serverVersionsBefore43CountEveryReturn() {
    assertThat(RabbitIdempotentConsumer.countsEveryReturn("3.10.8")).isTrue();
    assertThat(RabbitIdempotentConsumer.countsEveryReturn("4.2.3")).isTrue();
    assertThat(RabbitIdempotentConsumer.countsEveryReturn("4.3.0")).isFalse();
    assertThat(RabbitIdempotentConsumer.countsEveryReturn("5.0.0-beta.1")).isFalse();
    assertThat(RabbitIdempotentConsumer.countsEveryReturn("unknown")).isTrue();
  }

  @Test
  void aRedeliveryThisConsumerCannotAccountForIsFlagged() {
    DeliveryAttempts attempts = new DeliveryAttempts(10);
    AMQP.BasicProperties m = props("m", Map.of());
    assertThat(attempts.attempt(envelope(false), m, BODY).unaccounted()).as("a first delivery").isFalse();
    assertThat(attempts.attempt(envelope(true), m, BODY).unaccounted())
        .as("seen, never settled: its handler may have killed the worker").isTrue();
    attempts.failed(m, BODY, 2);
    assertThat(attempts.attempt(envelope(true), m, BODY).unaccounted()).as("after a failure it saw").isFalse();
    attempts.handedBack(m, BODY, 3);
    assertThat(attempts.attempt(envelope(true), m, BODY).unaccounted()).as("after a hand-back").isFalse();
    assertThat(attempts.attempt(envelope(true), props("restart", Map.of()), BODY).unaccounted())
        .as("redelivered, never seen (a restart)").isTrue();
    assertThat(attempts.attempt(envelope(false), props("q", Map.of("x-delivery-count", 2L)), BODY).unaccounted())
        .as("a quorum queue's count above 0").isTrue();
    assertThat(attempts.attempt(envelope(false), props("q0", Map.of("x-delivery-count", 0L)), BODY).unaccounted())
        .isFalse();
  }

  @Test
  void theDeliveryLimitLeavesRoomForPrefetchedMessagesOfAProcessKiller() {
    assertThat(RabbitIdempotentConsumer.minimumDeliveryLimit(5)).isEqualTo(10);
    assertThat(RabbitIdempotentConsumer.minimumDeliveryLimit(Integer.MAX_VALUE)).isEqualTo(Integer.MAX_VALUE);
  }
}
