package io.idem.sqs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import io.idem.IdempotencyException;
import io.idem.NonRetryableException;
import io.idem.testkit.DeadLetteredMessage;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.sqs.model.QueueAttributeName;

/** Dead-lettering: an explicit dead-letter queue with reasons, or the queue's RedrivePolicy. */
class SqsDeadLetterIT extends SqsTestBase {

  @Test
  void reasonIsKeptWhenTheOriginalAttributesFillTheSqsLimit() {
    SqsHarness queue = queue(false);
    Map<String, String> headers = new LinkedHashMap<>();
    headers.put("idempotency-key", "full-1");
    for (char c = 'a'; c <= 'h'; c++) {
      headers.put("x-" + c, "value-" + c);
    }
    byte[] payload = {(byte) 0xff, 0, 1, 2, (byte) 0xfe}; // not UTF-8: travels as Base64
    queue.publish(headers, payload); // 8 + key + body encoding = 10 attributes, the SQS maximum
    start(queue.config().build(), pipeline((message, session) -> {
      throw new NonRetryableException("cannot apply");
    }, retries(3)));

    await().atMost(TIMEOUT).until(() -> !queue.deadLetters().isEmpty());
    DeadLetteredMessage letter = queue.deadLetters().get(0);
    assertThat(letter.headers()).hasSizeLessThanOrEqualTo(10);
    assertThat(letter.cause()).isEqualTo(DeadLetterCause.NON_RETRYABLE.name());
    assertThat(letter.detail()).contains("cannot apply");
    assertThat(letter.headers())
        .containsEntry(DeadLetterReason.HEADER_CONSUMER_GROUP, group)
        .containsEntry(DeadLetterReason.HEADER_KEY, "full-1")
        .containsEntry(DeadLetterReason.HEADER_ATTEMPT, "1")
        .containsEntry("idempotency-key", "full-1")
        .containsEntry(SqsInboundMessage.BODY_ENCODING_ATTRIBUTE, SqsInboundMessage.BASE64)
        .containsEntry("x-a", "value-a")
        .containsEntry(DeadLetterAttributes.DROPPED_ATTRIBUTE, "x-b,x-c,x-d,x-e,x-f,x-g,x-h");
    assertThat(letter.payload()).containsExactly(payload);
    await().atMost(TIMEOUT).until(() -> queue.pendingCount() == 0);
    assertThat(db.total()).isZero();
  }

  @Test
  void redrivePolicyMovesTheMessageAfterMaxReceiveCount() {
    SqsHarness dlqHolder = queue(false);
    String dlqArn = dlqHolder.client().getQueueAttributes(b -> b.queueUrl(dlqHolder.dlqUrl())
        .attributeNames(QueueAttributeName.QUEUE_ARN)).attributes().get(QueueAttributeName.QUEUE_ARN);
    SqsHarness queue = queue(false, Map.of(QueueAttributeName.REDRIVE_POLICY,
        "{\"maxReceiveCount\":\"3\",\"deadLetterTargetArn\":\"" + dlqArn + "\"}"));
    publish(queue, "poison-1", "{\"poison\":true}");
    AtomicInteger calls = new AtomicInteger();
    start(queue.config().deadLetterQueueUrl(null).build(), pipeline((message, session) -> {
      calls.incrementAndGet();
      throw new IllegalStateException("always fails");
    }, retries(3)));

    await().atMost(TIMEOUT).until(() -> !dlqHolder.deadLetters().isEmpty());
    List<DeadLetteredMessage> dead = dlqHolder.deadLetters();
    assertThat(dead).hasSize(1);
    // SQS moves the message unchanged: the original attributes, no reason (that is only logged)
    assertThat(dead.get(0).headers()).containsEntry("idempotency-key", "poison-1");
    assertThat(dead.get(0).cause()).isNull();
    assertThat(new String(dead.get(0).payload(), StandardCharsets.UTF_8)).isEqualTo("{\"poison\":true}");
    assertThat(calls.get()).isEqualTo(3);
    assertThat(outcomes.deadLetters()).extracting(DeadLetterReason::cause)
        .containsExactly(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED);
    await().atMost(TIMEOUT).until(() -> queue.pendingCount() == 0);
  }

  @Test
  void startRefusesAQueueWithoutDeadLetterDestination() {
    SqsHarness queue = queue(false);
    SqsIdempotentConsumer consumer = SqsIdempotentConsumer.create(
        queue.config().deadLetterQueueUrl(null).build(), pipeline(recording(), retries(3)));
    try (consumer) {
      assertThatThrownBy(consumer::start)
          .isInstanceOf(IdempotencyException.class)
          .hasMessageContaining("no RedrivePolicy");
      assertThat(consumer.isRunning()).isFalse();
    }
  }

  @Test
  void startRefusesADeadLetterQueueOfTheOtherKind() {
    SqsHarness fifo = queue(true);
    SqsHarness standard = queue(false);
    SqsIdempotentConsumer consumer = SqsIdempotentConsumer.create(
        fifo.config().deadLetterQueueUrl(standard.queueUrl()).build(), pipeline(recording(), retries(3)));
    try (consumer) {
      assertThatThrownBy(consumer::start)
          .isInstanceOf(IdempotencyException.class)
          .hasMessageContaining("must be a FIFO queue");
    }
  }
}
