package io.idem.sqs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import io.idem.ProcessingOutcome;
import io.idem.testkit.DeadLetteredMessage;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.sqs.model.QueueAttributeName;

/**
 * Issue 11, item 1: an attempt is a handler run, not a receive. A message handed back without
 * having started must neither lose an attempt nor reach the queue's {@code RedrivePolicy} limit
 * unprocessed. (The standard-queue variant — a message skipped because its visibility was too
 * close to running out — is {@code SqsVisibilityHeartbeatIT.messageWhoseVisibilityRanOutBeforeItsTurnIsSkipped}.)
 */
class SqsAttemptAccountingIT extends SqsTestBase {
  private static final Duration VISIBILITY = Duration.ofSeconds(2);
  private static final int MAX_RECEIVE_COUNT = 3;
  /** Every receive the RedrivePolicy allows, each waiting out a visibility timeout, with room for a loaded machine. */
  private static final Duration WAIT = VISIBILITY.plus(SqsHarness.WAIT_TIME).multipliedBy(MAX_RECEIVE_COUNT + 1)
      .multipliedBy(4);

  /** The issue's set-up: FIFO, maxReceiveCount 3, maxAttempts 3; m1 always fails, m2 behind it. */
  @Test
  void theRestOfAFifoGroupBehindARetriedMessageIsNeitherCountedNorRedriven() {
    SqsHarness target = queue(true);
    SqsHarness queue = queue(true, redrivePolicy(target, MAX_RECEIVE_COUNT));
    queue.publish(Map.of("idempotency-key", "m1"), bytes("{\"m\":1}"), "g");
    queue.publish(Map.of("idempotency-key", "m2"), bytes("{\"m\":2}"), "g");
    List<String> runs = new CopyOnWriteArrayList<>();
    var pipeline = pipeline((message, session) -> {
      runs.add(key(message) + "@" + message.deliveryAttempt());
      if (key(message).equals("m1")) {
        throw new IllegalStateException("m1 always fails");
      }
      TestDatabase.record(session, key(message), message.payload());
    }, retries(3));
    // per-message mode: in batch mode m1's first run is inside the rolled-back batch of m1 and m2
    start(queue.config().deadLetterQueueUrl(null).visibilityTimeout(VISIBILITY).maxBatchSize(1).build(), pipeline);

    await().atMost(WAIT).until(() -> db.total() == 1 && !target.deadLetters().isEmpty());
    await().atMost(WAIT).until(() -> queue.pendingCount() == 0);

    assertThat(runs).containsExactly("m1@1", "m1@2", "m1@3", "m2@1");
    assertThat(db.order()).containsExactly("m2");
    List<DeadLetteredMessage> dead = target.deadLetters();
    assertThat(dead).hasSize(1);
    assertThat(dead.get(0).headers())
        .containsEntry("idempotency-key", "m1")
        .containsEntry(DeadLetterReason.HEADER_ATTEMPT, "3")
        .containsEntry(DeadLetterReason.HEADER_CONSUMER_GROUP, group);
    assertThat(dead.get(0).cause()).isEqualTo(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED.name());
    assertThat(dead.get(0).detail()).contains("attempt 3 of 3", "m1 always fails");
    assertThat(outcomes.count("m1", ProcessingOutcome.RETRY)).isEqualTo(2);
    assertThat(outcomes.count("m2", ProcessingOutcome.PROCESSED)).isEqualTo(1);
  }

  /**
   * maxReceiveCount 2 below maxAttempts 5: Idem dead-letters, with its reason, when the receive
   * count reaches the queue's limit, before SQS would move the message without one.
   */
  @Test
  void aRedrivePolicyLimitBelowMaxAttemptsIsWhereIdemDeadLetters() {
    SqsHarness target = queue(false);
    SqsHarness queue = queue(false, redrivePolicy(target, 2));
    publish(queue, "low-limit", "{}");
    List<Integer> attempts = new CopyOnWriteArrayList<>();
    start(queue.config().deadLetterQueueUrl(null).visibilityTimeout(VISIBILITY).build(),
        pipeline((message, session) -> {
          attempts.add(message.deliveryAttempt());
          throw new IllegalStateException("always fails");
        }, retries(5)));

    await().atMost(WAIT).until(() -> !target.deadLetters().isEmpty());
    await().atMost(WAIT).until(() -> queue.pendingCount() == 0);

    assertThat(attempts).containsExactly(1, 2);
    DeadLetteredMessage letter = target.deadLetters().get(0);
    assertThat(letter.cause()).isEqualTo(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED.name());
    // the pipeline's own reason, at the lower limit: the key and the exception are on the copy
    assertThat(letter.detail()).contains("attempt 2 of 2").contains("broker's own limit 2")
        .contains("always fails");
    assertThat(letter.headers()).containsEntry(DeadLetterReason.HEADER_ATTEMPT, "2")
        .containsEntry("idempotency-key", "low-limit")
        .containsEntry(DeadLetterReason.HEADER_EXCEPTION, IllegalStateException.class.getName());
  }

  static Map<QueueAttributeName, String> redrivePolicy(SqsHarness target, int maxReceiveCount) {
    String arn = target.client().getQueueAttributes(b -> b.queueUrl(target.dlqUrl())
        .attributeNames(QueueAttributeName.QUEUE_ARN)).attributes().get(QueueAttributeName.QUEUE_ARN);
    return Map.of(QueueAttributeName.REDRIVE_POLICY,
        "{\"maxReceiveCount\":\"" + maxReceiveCount + "\",\"deadLetterTargetArn\":\"" + arn + "\"}");
  }

  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }
}
