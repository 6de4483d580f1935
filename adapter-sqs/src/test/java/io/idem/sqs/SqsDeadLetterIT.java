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
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.QueueAttributeName;
import software.amazon.awssdk.services.sqs.model.SqsException;

/** Dead-lettering: an explicit dead-letter queue with reasons, or the queue's RedrivePolicy. */
class SqsDeadLetterIT extends SqsTestBase {
  private static final int MAX_RECEIVE_COUNT = 3;

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

  /**
   * Issue 11: with no deadLetterQueueUrl, Idem sends the copy itself, with its reason, to the
   * RedrivePolicy's target at its own limit, instead of handing the message back for SQS to move
   * unchanged (the old way, which also was the flaky wait for SQS's move).
   */
  @Test
  void theRedrivePolicyTargetGetsIdemsCopyWithItsReason() {
    SqsHarness target = queue(false);
    SqsHarness queue = queue(false, SqsAttemptAccountingIT.redrivePolicy(target, MAX_RECEIVE_COUNT));
    publish(queue, "poison-1", "{\"poison\":true}");
    AtomicInteger calls = new AtomicInteger();
    start(queue.config().deadLetterQueueUrl(null).build(), pipeline((message, session) -> {
      calls.incrementAndGet();
      throw new IllegalStateException("always fails");
    }, retries(MAX_RECEIVE_COUNT)));

    await().atMost(redriveWait(queue)).until(() -> !target.deadLetters().isEmpty());
    await().atMost(TIMEOUT).until(() -> queue.pendingCount() == 0);
    List<DeadLetteredMessage> dead = target.deadLetters();
    assertThat(dead).hasSize(1);
    assertThat(dead.get(0).headers()).containsEntry("idempotency-key", "poison-1")
        .containsEntry(DeadLetterReason.HEADER_ATTEMPT, "3");
    assertThat(dead.get(0).cause()).isEqualTo(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED.name());
    assertThat(dead.get(0).detail()).contains("always fails");
    assertThat(new String(dead.get(0).payload(), StandardCharsets.UTF_8)).isEqualTo("{\"poison\":true}");
    assertThat(calls.get()).isEqualTo(MAX_RECEIVE_COUNT);
    assertThat(outcomes.deadLetters()).extracting(DeadLetterReason::cause)
        .containsExactly(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED);
  }

  /**
   * When the RedrivePolicy's target cannot be resolved (GetQueueUrl refused here), the message is
   * handed back for SQS to move after maxReceiveCount receives, unchanged: the reason is only
   * logged.
   */
  @Test
  void redrivePolicyMovesTheMessageAfterMaxReceiveCount() {
    SqsHarness target = queue(false);
    SqsHarness queue = queue(false, SqsAttemptAccountingIT.redrivePolicy(target, MAX_RECEIVE_COUNT));
    publish(queue, "poison-2", "{\"poison\":true}");
    AtomicInteger calls = new AtomicInteger();
    SqsCallLog log = new SqsCallLog();
    start(queue.config().deadLetterQueueUrl(null).build(), pipeline((message, session) -> {
      calls.incrementAndGet();
      throw new IllegalStateException("always fails");
    }, retries(MAX_RECEIVE_COUNT)), redriveTargetDenied(log));

    awaitRedrive(target, queue, calls, log);
    List<DeadLetteredMessage> dead = target.deadLetters();
    assertThat(dead).hasSize(1);
    // SQS moves the message unchanged, with its original attributes. That this copy carries no
    // reason is a gap (issue 16: "dead-lettered with a reason"), not asserted as correct here; the
    // reason the pipeline decided is checked below, where it is recorded (listener and log)
    assertThat(dead.get(0).headers()).containsEntry("idempotency-key", "poison-2");
    assertThat(new String(dead.get(0).payload(), StandardCharsets.UTF_8)).isEqualTo("{\"poison\":true}");
    assertThat(calls.get()).isEqualTo(MAX_RECEIVE_COUNT);
    assertThat(outcomes.deadLetters()).extracting(DeadLetterReason::cause)
        .containsExactly(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED);
    assertNoVisibilityChangeAfterTheHandBack(log);
    await().atMost(TIMEOUT).until(() -> queue.pendingCount() == 0);
  }

  /**
   * The hypothesis of issue 11 for the redrive test that once timed out: the heartbeat re-hides a
   * message after it was handed back for the RedrivePolicy. Here the heartbeat is due on every
   * tick while the handler runs (visibility 3 s, extended after a tenth of it, each attempt taking
   * longer than that), so an extension racing the hand-back would show; none may follow it, for
   * any receipt handle, and the message must reach the RedrivePolicy's target.
   */
  @Test
  void theHeartbeatNeverHidesAMessageAgainAfterItWasHandedBack() {
    SqsHarness target = queue(false);
    SqsHarness queue = queue(false, SqsAttemptAccountingIT.redrivePolicy(target, MAX_RECEIVE_COUNT));
    publish(queue, "poison-3", "{}");
    AtomicInteger calls = new AtomicInteger();
    SqsCallLog log = new SqsCallLog();
    Duration visibility = Duration.ofSeconds(3);
    start(queue.config().deadLetterQueueUrl(null).visibilityTimeout(visibility).heartbeatShare(0.1).build(),
        pipeline((message, session) -> {
          calls.incrementAndGet();
          work(visibility.dividedBy(3)); // the heartbeat extends it meanwhile
          throw new IllegalStateException("always fails");
        }, retries(MAX_RECEIVE_COUNT)), redriveTargetDenied(log));

    awaitRedrive(target, queue, calls, log);
    assertThat(log.visibilityChanges()).as("the heartbeat ran during the attempts")
        .anyMatch(c -> c.seconds() == visibility.getSeconds());
    assertNoVisibilityChangeAfterTheHandBack(log);
    assertThat(calls.get()).isEqualTo(MAX_RECEIVE_COUNT);
  }

  /** A client of the consumer that records its calls and may not resolve the target's URL. */
  private SqsClient redriveTargetDenied(SqsCallLog log) {
    return interceptedClient(log, (method, args, real) -> {
      if (method.equals("getQueueUrl")) {
        throw SqsException.builder().message("AccessDenied (test)").statusCode(403).build();
      }
      return real.call();
    });
  }

  /**
   * Waits until the message is in the RedrivePolicy's target; when it is not, says where it is:
   * still in the queue (visible or hidden: Idem or a visibility extension holds it) or nowhere
   * (the emulator dropped it: ElasticMQ deletes a message at maxReceiveCount when its queue has no
   * dead-letter queue actor), and every call the consumer made.
   */
  private void awaitRedrive(SqsHarness target, SqsHarness queue, AtomicInteger calls, SqsCallLog log) {
    try {
      await().atMost(redriveWait(queue)).until(() -> !target.deadLetters().isEmpty());
    } catch (org.awaitility.core.ConditionTimeoutException e) {
      throw new AssertionError("nothing reached the RedrivePolicy's target in " + redriveWait(queue)
          + "; the queue holds " + queue.visibleCount() + " visible of " + queue.pendingCount()
          + " message(s) (0 of 0: the emulator dropped it), handler calls " + calls.get()
          + "; the consumer's last SQS calls:\n" + log.describe(40), e);
    }
  }

  /** After a receipt handle was set to visibility 0 (handed back), SQS got no other change for it. */
  private static void assertNoVisibilityChangeAfterTheHandBack(SqsCallLog log) {
    List<SqsCallLog.VisibilityChange> changes = log.visibilityChanges();
    for (int i = 0; i < changes.size(); i++) {
      if (changes.get(i).seconds() == 0) {
        String handle = changes.get(i).receiptHandle();
        assertThat(changes.subList(i + 1, changes.size()))
            .as("visibility changes after the hand-back of a receipt handle; calls:\n%s", log.describe(40))
            .noneMatch(c -> c.receiptHandle().equals(handle));
      }
    }
    assertThat(changes).as("a hand-back (visibility 0) for the RedrivePolicy").anyMatch(c -> c.seconds() == 0);
  }

  /**
   * Every receive the RedrivePolicy allows plus the one that moves the message, each after at
   * most a visibility timeout and a long poll, times four for a loaded machine.
   */
  private static Duration redriveWait(SqsHarness queue) {
    Duration visibility = queue.config().build().visibilityTimeout();
    return visibility.plus(SqsHarness.WAIT_TIME).multipliedBy(MAX_RECEIVE_COUNT + 1).multipliedBy(4);
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
