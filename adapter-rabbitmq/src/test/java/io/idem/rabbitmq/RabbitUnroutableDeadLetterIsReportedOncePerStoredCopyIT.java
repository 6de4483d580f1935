package io.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.DeadLetterCause;
import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.NonRetryableException;
import io.idem.ProcessingOutcome;
import io.idem.testkit.OutcomeRecorder;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.ibatis.session.SqlSession;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Listeners hear what happened at the broker (issue 10, case 6): while the queue's dead-letter
 * exchange routes to no queue, the mandatory copy comes back unroutable, {@code deadLetter}
 * throws, the original is not acked and comes back — and {@code onDeadLetter} is not called.
 * Once a queue is bound, the next try stores the copy: exactly one copy, exactly one
 * {@code onDeadLetter}, however many tries failed before.
 */
class RabbitUnroutableDeadLetterIsReportedOncePerStoredCopyIT {
  private static final Duration TIMEOUT = Duration.ofSeconds(30);
  private static final String KEY = "poison-1";

  @ParameterizedTest
  @EnumSource(RabbitQueueType.class)
  void onDeadLetterFiresOnceTheCopyIsStoredNotOncePerTry(RabbitQueueType type) throws Exception {
    try (TestQueue queue = TestQueue.declare("dlx-nowhere", type);
        TestDatabase db = TestDatabase.fresh("rabbit_dlx_nowhere")) {
      queue.channel().queueUnbind(queue.name + ".dlq", queue.name + ".dlx", "");
      List<Throwable> failedTries = new CopyOnWriteArrayList<>();
      OutcomeRecorder outcomes = new OutcomeRecorder();
      IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(db.store)
          .consumerGroup("dlx-nowhere")
          .handler((message, session) -> {
            TestDatabase.record(session, KEY, message.deliveryAttempt());
            throw new NonRetryableException("cannot be applied");
          })
          .listener(outcomes)
          .listener(new IdempotencyListener() {
            @Override
            public void onAcknowledgementFailure(InboundMessage message, @Nullable IdempotencyKey key,
                ProcessingOutcome intended, RuntimeException failure, Duration elapsed) {
              failedTries.add(failure);
            }
          })
          .build();
      try (RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(queue.config(), pipeline)) {
        consumer.start();
        queue.publish(KEY, "{}");
        await("dead-lettering refused twice: routed to no queue").atMost(TIMEOUT)
            .until(() -> failedTries.size() >= 2);
        assertThat(failedTries).allSatisfy(f -> assertThat(f).hasMessageContaining("to no queue"));
        assertThat(outcomes.deadLetters()).as("no copy stored, so no onDeadLetter").isEmpty();
        assertThat(outcomes.count(KEY, ProcessingOutcome.DEAD_LETTERED)).isZero();
        assertThat(queue.deadLetters()).isEmpty();

        queue.channel().queueBind(queue.name + ".dlq", queue.name + ".dlx", "");
        await("the copy stored once a queue is bound").atMost(TIMEOUT)
            .until(() -> outcomes.count(KEY, ProcessingOutcome.DEAD_LETTERED) == 1);
        assertThat(consumer.isRunning()).isTrue();
      }
      assertThat(queue.deadLetters()).singleElement()
          .satisfies(copy -> assertThat(copy.cause()).isEqualTo(DeadLetterCause.NON_RETRYABLE.name()));
      assertThat(outcomes.deadLetters()).as("one onDeadLetter per stored copy").hasSize(1);
      assertThat(failedTries).hasSizeGreaterThanOrEqualTo(2);
      assertThat(queue.ready()).isZero();
      assertThat(db.effects(KEY)).isZero();
    }
  }
}
