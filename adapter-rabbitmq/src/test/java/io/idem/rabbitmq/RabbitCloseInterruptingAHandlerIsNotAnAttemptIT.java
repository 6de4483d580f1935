package io.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Level;
import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.testkit.OutcomeRecorder;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;
import org.apache.ibatis.session.SqlSession;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Shutdown is not a failure: with {@code maxAttempts(2)}, a message that failed once (attempt 1)
 * and whose handler is blocked on attempt 2 when {@code close()} runs out of
 * {@code shutdownTimeout} is interrupted, not dead-lettered: its outcome is {@code RELEASED}, the
 * worker keeps the interrupt flag and stops without an error, the delivery goes back to the queue
 * unacknowledged, and the next consumer applies it. Per message ({@code maxBatchSize(1)}, a run)
 * and in the default batch mode (the message alone in the buffer: a delivery processed on its own),
 * on both queue types.
 */
class RabbitCloseInterruptingAHandlerIsNotAnAttemptIT {
  private static final Duration TIMEOUT = Duration.ofSeconds(30);
  private static final String KEY = "blocked-1";

  static Stream<Arguments> queueTypesAndBatchSizes() {
    return Stream.of(RabbitQueueType.values()).flatMap(type -> Stream.of(
        Arguments.of(type, 1), Arguments.of(type, RabbitConsumerConfig.DEFAULT_MAX_BATCH_SIZE)));
  }

  @ParameterizedTest(name = "{0}, maxBatchSize {1}")
  @MethodSource("queueTypesAndBatchSizes")
  void anInterruptedLastAttemptGoesBackToTheQueueAndIsAppliedByTheNextConsumer(RabbitQueueType type,
      int maxBatchSize) throws Exception {
    RetryPolicy twoAttempts = RetryPolicy.builder().maxAttempts(2).initialBackoff(Duration.ofMillis(50))
        .maxBackoff(Duration.ofMillis(50)).multiplier(1.0).jitter(0).build();
    try (TestQueue queue = TestQueue.declare("close-interrupt", type);
        TestDatabase db = TestDatabase.fresh("rabbit_close_interrupt")) {
      queue.publish(KEY, "{}");
      List<Integer> attempts = new CopyOnWriteArrayList<>();
      CountDownLatch blocking = new CountDownLatch(1);
      CountDownLatch never = new CountDownLatch(1);
      AtomicBoolean flagKept = new AtomicBoolean();
      OutcomeRecorder first = new OutcomeRecorder();
      IdempotentConsumer<SqlSession> blockingPipeline = IdempotentConsumer.builder(db.store)
          .consumerGroup("close-interrupt")
          .retryPolicy(twoAttempts)
          .handler((message, session) -> {
            attempts.add(message.deliveryAttempt());
            TestDatabase.record(session, KEY, message.deliveryAttempt());
            if (attempts.size() == 1) {
              throw new IllegalStateException("attempt 1 fails");
            }
            blocking.countDown();
            never.await(); // interrupted by close()
          })
          .listener(first)
          .listener(new IdempotencyListener() {
            @Override
            public void onOutcome(InboundMessage message, @Nullable IdempotencyKey key,
                ProcessingOutcome outcome, Duration elapsed) {
              if (outcome == ProcessingOutcome.RELEASED) {
                flagKept.set(Thread.currentThread().isInterrupted());
              }
            }
          })
          .build();
      try (CapturedLog log = CapturedLog.of(RabbitIdempotentConsumer.class)) {
        RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(
            queue.configBuilder().concurrency(1).maxBatchSize(maxBatchSize).shutdownTimeout(Duration.ofMillis(500))
                .build(),
            blockingPipeline);
        consumer.start();
        assertThat(blocking.await(30, TimeUnit.SECONDS)).isTrue();

        consumer.close();

        assertThat(attempts).containsExactly(1, 2);
        assertThat(first.count(KEY, ProcessingOutcome.RELEASED)).isEqualTo(1);
        assertThat(first.count(KEY, ProcessingOutcome.DEAD_LETTERED)).isZero();
        assertThat(first.deadLetters()).isEmpty();
        assertThat(flagKept).as("the interrupt flag is set again for the worker").isTrue();
        assertThat(log.messages(Level.ERROR)).as("a shutdown is no error").isEmpty();
        assertThat(log.messages(Level.WARN)).noneMatch(m -> m.contains("the flag is cleared"));
      }
      assertThat(db.effects(KEY)).isZero();
      await("returned to the queue unacknowledged").atMost(TIMEOUT).until(() -> queue.ready() == 1);
      assertThat(queue.deadLetters()).isEmpty();

      List<Integer> nextAttempts = new CopyOnWriteArrayList<>();
      OutcomeRecorder second = new OutcomeRecorder();
      IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(db.store)
          .consumerGroup("close-interrupt")
          .retryPolicy(twoAttempts)
          .handler((message, session) -> {
            nextAttempts.add(message.deliveryAttempt());
            TestDatabase.record(session, KEY, message.deliveryAttempt());
          })
          .listener(second)
          .build();
      try (RabbitIdempotentConsumer next = RabbitIdempotentConsumer.create(queue.config(), pipeline)) {
        next.start();
        await("applied by the next consumer").atMost(TIMEOUT).until(() -> db.effects(KEY) == 1);
        await("settled").atMost(TIMEOUT).until(() -> second.settled().size() == 1);
      }
      assertThat(second.count(KEY, ProcessingOutcome.PROCESSED)).isEqualTo(1);
      assertThat(queue.deadLetters()).isEmpty();
      assertThat(queue.ready()).isZero();
      if (type == RabbitQueueType.CLASSIC) {
        // no broker count: a redelivered message is attempt 2 for a consumer that never saw it
        assertThat(nextAttempts).containsExactly(2);
      } else {
        // x-delivery-count: a nack is not counted from RabbitMQ 4.3 on, every return before it
        assertThat(nextAttempts).hasSize(1).allSatisfy(a -> assertThat(a).isBetween(2, 3));
      }
    }
  }
}
