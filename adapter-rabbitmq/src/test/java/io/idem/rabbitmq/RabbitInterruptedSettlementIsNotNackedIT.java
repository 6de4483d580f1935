package io.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Level;
import com.rabbitmq.client.Envelope;
import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.IdempotencyKeyExtractor;
import io.idem.KeyExtraction;
import io.idem.ProcessingOutcome;
import io.idem.fixtures.RabbitFixture;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.ibatis.session.SqlSession;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A handler that re-asserts its thread's interruption left the worker interrupted while it waited
 * for the settlement: the wait ended with "outcome unknown" while the settler thread still acked
 * the delivery, and the delivery, taken for unsettled, was {@code basicNack}ed as well — an unknown
 * delivery tag by then, so RabbitMQ closed the channel and requeued everything in flight on it.
 * Now an ack handed to the settler, and a dead-letter whose copy was confirmed, count as settled:
 * the tag is never nacked after them, and the channel stays. In per-message mode ({@code
 * maxBatchSize(1)}, a run) and in the default batch mode, where a delivery alone in the buffer is
 * processed on its own.
 */
class RabbitInterruptedSettlementIsNotNackedIT {
  private static final Duration TIMEOUT = Duration.ofSeconds(30);

  /**
   * Records an effect per message; for {@code interrupt-1} it then sets its thread's interrupt
   * flag, as a handler restoring an interrupt it caught would.
   */
  private static IdempotentConsumer.Builder<SqlSession> interrupting(TestDatabase db) {
    return IdempotentConsumer.builder(db.store)
        .handler((message, session) -> {
          TestDatabase.recordingHandler().handle(message, session);
          if ("interrupt-1".equals(message.header("idempotency-key"))) {
            Thread.currentThread().interrupt();
          }
        });
  }

  /**
   * Dead-letters {@code interrupt-1} for want of a key with the interrupt flag set when the
   * dead-letter copy is awaited. (A handler that sets the flag and then fails is taken for a
   * shutdown since issue 10 — {@code RELEASED}, not dead-lettered — so the flag is set by the key
   * extractor here, on the path that dead-letters without running the handler.)
   */
  private static IdempotentConsumer.Builder<SqlSession> interruptingWithoutAKey(TestDatabase db) {
    IdempotencyKeyExtractor header = IdempotencyKeyExtractor.header("idempotency-key");
    return IdempotentConsumer.builder(db.store)
        .keyExtractor(message -> {
          if ("interrupt-1".equals(message.header("idempotency-key"))) {
            Thread.currentThread().interrupt();
            return KeyExtraction.absent("no key for interrupt-1 (test)");
          }
          return header.extract(message);
        })
        .handler(TestDatabase.recordingHandler());
  }

  @ParameterizedTest(name = "maxBatchSize {0}")
  @ValueSource(ints = {1, RabbitConsumerConfig.DEFAULT_MAX_BATCH_SIZE})
  void anAckAwaitedWithTheInterruptFlagSetIsNotNackedToo(int maxBatchSize) throws Exception {
    try (TestQueue queue = TestQueue.declare("interrupt-ack", RabbitQueueType.CLASSIC);
        TestDatabase db = TestDatabase.fresh("rabbit_interrupt")) {
      runOnOneChannel(queue, maxBatchSize, db, interrupting(db), () -> db.effects("interrupt-1") == 1);
      assertThat(db.effects("interrupt-1")).isEqualTo(1);
      assertThat(queue.deadLetters()).isEmpty();
    }
  }

  @ParameterizedTest(name = "maxBatchSize {0}")
  @ValueSource(ints = {1, RabbitConsumerConfig.DEFAULT_MAX_BATCH_SIZE})
  void aDeadLetterAwaitedWithTheInterruptFlagSetIsNotNackedToo(int maxBatchSize) throws Exception {
    try (TestQueue queue = TestQueue.declare("interrupt-dl", RabbitQueueType.CLASSIC);
        TestDatabase db = TestDatabase.fresh("rabbit_interrupt")) {
      runOnOneChannel(queue, maxBatchSize, db, interruptingWithoutAKey(db), () -> queue.deadLetters().size() == 1);
      assertThat(db.effects("interrupt-1")).isZero();
      assertThat(queue.deadLetters()).hasSize(1);
    }
  }

  /**
   * Runs {@code interrupt-1} until {@code settled}, waits until a nack of its tag would have been
   * due, then runs {@code after-1}: both on the same channel (delivery tags 1 and 2) of the same
   * connection, with no loss logged.
   */
  private static void runOnOneChannel(TestQueue queue, int maxBatchSize, TestDatabase db,
      IdempotentConsumer.Builder<SqlSession> pipeline, Callable<Boolean> settled) throws Exception {
    List<Long> tags = new CopyOnWriteArrayList<>();
    pipeline.consumerGroup("interrupt").listener(new IdempotencyListener() {
      // every delivery ends in exactly one of these two (the settlement awaited with the flag set
      // throws "outcome unknown"), with or without a key
      @Override
      public void onOutcome(InboundMessage message, @Nullable IdempotencyKey key,
          ProcessingOutcome outcome, Duration elapsed) {
        tags.add(message.unwrap(Envelope.class).orElseThrow().getDeliveryTag());
      }

      @Override
      public void onAcknowledgementFailure(InboundMessage message, @Nullable IdempotencyKey key,
          ProcessingOutcome intended, RuntimeException failure, Duration elapsed) {
        tags.add(message.unwrap(Envelope.class).orElseThrow().getDeliveryTag());
      }
    });
    String connectionName = queue.config().connectionName();
    try (CapturedLog log = CapturedLog.of(RabbitIdempotentConsumer.class);
        RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(
            queue.configBuilder().maxBatchSize(maxBatchSize).build(), pipeline.build())) {
      consumer.start();
      List<String> connections = RabbitFixture.shared().connectionPids(connectionName);
      assertThat(connections).hasSize(1);

      queue.publish("interrupt-1", "{}");
      await("interrupt-1 settled").atMost(TIMEOUT).until(settled);
      // a basicNack of the settled tag would be due after the recovery interval, and close the
      // channel (the consumer would be gone): three intervals of the configured period, watched
      Duration nackDue = queue.config().recoveryInterval().multipliedBy(3);
      await("the channel stays open").during(nackDue).atMost(nackDue.plus(TIMEOUT))
          .until(() -> queue.consumers() == 1);

      queue.publish("after-1", "{}");
      await("the worker takes the next message").atMost(TIMEOUT).until(() -> db.effects("after-1") == 1);
      assertThat(consumer.isRunning()).isTrue();
      assertThat(tags).containsExactly(1L, 2L); // one channel throughout, and interrupt-1 not redelivered
      assertThat(RabbitFixture.shared().connectionPids(connectionName)).isEqualTo(connections);
      assertThat(log.messages(Level.WARN)).noneMatch(m -> m.contains("lost the connection or channel"));
      assertThat(queue.consumers()).isEqualTo(1);
    }
    assertThat(queue.ready()).isZero();
    assertThat(db.effects("after-1")).isEqualTo(1);
  }
}
