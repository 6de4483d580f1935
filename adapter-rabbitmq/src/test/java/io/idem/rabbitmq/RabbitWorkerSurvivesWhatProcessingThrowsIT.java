package io.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Envelope;
import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.testkit.ErrorInjector;
import io.idem.testkit.OutcomeRecorder;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.api.Test;

/**
 * The pipeline turns an {@link Error} from the handler into a handler failure, but not one from an
 * {@link IdempotencyListener}: that escapes {@code IdempotentConsumer.process}. Such an error used
 * to end the worker thread, leaving its delivery unacked on a live channel for ever and
 * {@code isRunning()} true. Now the delivery goes back to the queue and the worker carries on; a
 * fatal {@link VirtualMachineError} still ends the worker, visibly.
 */
class RabbitWorkerSurvivesWhatProcessingThrowsIT {
  private static final Duration TIMEOUT = Duration.ofSeconds(30);

  private static IdempotentConsumer<SqlSession> pipeline(TestDatabase db, IdempotencyListener... listeners) {
    IdempotentConsumer.Builder<SqlSession> b = IdempotentConsumer.builder(db.store)
        .consumerGroup("survive")
        .retryPolicy(RetryPolicy.builder().maxAttempts(5).initialBackoff(Duration.ofMillis(50)).jitter(0).build())
        .handler(TestDatabase.recordingHandler());
    for (IdempotencyListener l : listeners) {
      b.listener(l);
    }
    return b.build();
  }

  @Test
  void anErrorBeforeTheAckReturnsTheDeliveryAndTheWorkerGoesOn() throws Exception {
    try (TestQueue queue = TestQueue.declare("survive-error", RabbitQueueType.CLASSIC);
        TestDatabase db = TestDatabase.fresh("rabbit_survive")) {
      OutcomeRecorder outcomes = new OutcomeRecorder();
      IdempotentConsumer<SqlSession> pipeline =
          pipeline(db, ErrorInjector.afterCommit("boom-1", 1, new AssertionError("boom")), outcomes);
      try (RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(queue.config(), pipeline)) {
        consumer.start();
        queue.publish("boom-1", "{}");
        // committed, then the error: the redelivery is found to be a duplicate and acked
        await("redelivered and acked").atMost(TIMEOUT)
            .until(() -> outcomes.count("boom-1", ProcessingOutcome.DUPLICATE) == 1);
        assertThat(db.effects("boom-1")).isEqualTo(1);
        assertThat(consumer.isRunning()).isTrue();

        queue.publish("after-1", "{}");
        await("the worker takes the next message").atMost(TIMEOUT).until(() -> db.effects("after-1") == 1);
        assertThat(consumer.isRunning()).isTrue();
      }
      assertThat(db.effects("boom-1")).isEqualTo(1);
      assertThat(queue.ready()).isZero(); // nothing was left unacked for the close to return
      assertThat(queue.deadLetters()).isEmpty();
    }
  }

  @Test
  void anErrorAfterTheAckReturnsNothingAndKeepsTheChannel() throws Exception {
    try (TestQueue queue = TestQueue.declare("survive-acked", RabbitQueueType.CLASSIC);
        TestDatabase db = TestDatabase.fresh("rabbit_survive")) {
      OutcomeRecorder outcomes = new OutcomeRecorder();
      List<Long> tags = new CopyOnWriteArrayList<>();
      IdempotencyListener tagRecorder = new IdempotencyListener() {
        @Override
        public void onKey(InboundMessage message, IdempotencyKey key) {
          tags.add(message.unwrap(Envelope.class).orElseThrow().getDeliveryTag());
        }
      };
      IdempotentConsumer<SqlSession> pipeline = pipeline(
          db, tagRecorder, outcomes, ErrorInjector.onOutcome("acked-1", 1, new AssertionError("boom after the ack")));
      try (RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(queue.config(), pipeline)) {
        consumer.start();
        queue.publish("acked-1", "{}");
        await().atMost(TIMEOUT).until(() -> outcomes.count("acked-1", ProcessingOutcome.PROCESSED) == 1);
        // a basicNack of the acked tag would be due after the recovery interval, and close the
        // channel (the consumer would be gone): three intervals of the configured period, watched
        Duration nackDue = queue.config().recoveryInterval().multipliedBy(3);
        int consumersBefore = queue.consumers();
        await("the channel stays open").during(nackDue).atMost(nackDue.plus(TIMEOUT))
            .until(() -> consumersBefore > 0 && queue.consumers() == consumersBefore);

        queue.publish("after-2", "{}");
        await().atMost(TIMEOUT).until(() -> db.effects("after-2") == 1);
        assertThat(consumer.isRunning()).isTrue();
      }
      assertThat(tags).containsExactly(1L, 2L); // one channel throughout: tag 1 was not redelivered
      assertThat(db.effects("acked-1")).isEqualTo(1);
      assertThat(queue.ready()).isZero();
    }
  }

  @Test
  void aFatalErrorEndsTheWorkerVisiblyAndReturnsTheDelivery() throws Exception {
    try (TestQueue queue = TestQueue.declare("survive-fatal", RabbitQueueType.CLASSIC);
        TestDatabase db = TestDatabase.fresh("rabbit_survive")) {
      OutOfMemoryError fatal = new OutOfMemoryError("simulated");
      IdempotentConsumer<SqlSession> pipeline = pipeline(db, ErrorInjector.afterCommit("fatal-1", 1, fatal));
      RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(queue.config(), pipeline);
      List<Throwable> uncaught = new CopyOnWriteArrayList<>();
      Thread.UncaughtExceptionHandler previous = Thread.getDefaultUncaughtExceptionHandler();
      // recorded here, not rethrown by Awaitility: the test runner takes an OutOfMemoryError for its own
      Thread.setDefaultUncaughtExceptionHandler((thread, e) -> uncaught.add(e));
      try {
        consumer.start();
        queue.publish("fatal-1", "{}");
        await("the consumer reports the dead worker").dontCatchUncaughtExceptions().atMost(TIMEOUT)
            .until(() -> !consumer.isRunning());
        await("the worker ended with the error").dontCatchUncaughtExceptions().atMost(TIMEOUT)
            .until(() -> uncaught.contains(fatal));
        consumer.close();
      } finally {
        Thread.setDefaultUncaughtExceptionHandler(previous);
      }
      // returned, never acked: the committed effect is found again as a duplicate by the next consumer
      await("returned to the queue").atMost(TIMEOUT).until(() -> queue.ready() == 1);

      OutcomeRecorder outcomes = new OutcomeRecorder();
      try (RabbitIdempotentConsumer next = RabbitIdempotentConsumer.create(queue.config(), pipeline(db, outcomes))) {
        next.start();
        await().atMost(TIMEOUT).until(() -> outcomes.count("fatal-1", ProcessingOutcome.DUPLICATE) == 1);
      }
      assertThat(db.effects("fatal-1")).isEqualTo(1);
      assertThat(queue.ready()).isZero();
    }
  }
}
