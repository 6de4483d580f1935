package io.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Level;
import io.idem.IdempotencyListener;
import io.idem.IdempotentConsumer;
import io.idem.ProcessingOutcome;
import io.idem.fixtures.RabbitFixture;
import io.idem.testkit.ErrorInjector;
import io.idem.testkit.OutcomeRecorder;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.api.Test;

/**
 * With the default concurrency 1, a consumer whose only worker had died kept its channel and its
 * {@code basicConsume}: RabbitMQ went on pushing up to {@code prefetch} deliveries into a buffer
 * nobody read, and other consumers of the queue got none of them until {@code close()} (a
 * reconnect did the same). Now the consumer stops consuming when no worker is left: its
 * connection is closed, so RabbitMQ requeues every unacked delivery at once and sends new ones to
 * the other consumers, and it does not reconnect.
 */
class RabbitConsumerStopsWhenNoWorkerIsLeftIT {
  private static final Duration TIMEOUT = Duration.ofSeconds(30);
  private static final String FATAL = "fatal-1";
  private static final List<String> AFTER = List.of("after-1", "after-2", "after-3");

  private static IdempotentConsumer<SqlSession> pipeline(TestDatabase db, IdempotencyListener listener) {
    return IdempotentConsumer.builder(db.store)
        .consumerGroup("stop")
        .handler(TestDatabase.recordingHandler())
        .listener(listener)
        .build();
  }

  @Test
  void aFatalErrorInTheOnlyWorkerHandsEveryMessageToOtherConsumers() throws Exception {
    try (TestQueue queue = TestQueue.declare("stop-fatal", RabbitQueueType.CLASSIC);
        TestDatabase db = TestDatabase.fresh("rabbit_stop");
        CapturedLog log = CapturedLog.of(RabbitIdempotentConsumer.class)) {
      OutOfMemoryError fatal = new OutOfMemoryError("simulated");
      RabbitIdempotentConsumer consumer =
          RabbitIdempotentConsumer.create(queue.config(), pipeline(db, ErrorInjector.afterCommit(FATAL, 1, fatal)));
      List<Throwable> uncaught = new CopyOnWriteArrayList<>();
      Thread.UncaughtExceptionHandler previous = Thread.getDefaultUncaughtExceptionHandler();
      // recorded here, not rethrown by Awaitility: the test runner takes an OutOfMemoryError for its own
      Thread.setDefaultUncaughtExceptionHandler((thread, e) -> uncaught.add(e));
      try {
        consumer.start();
        queue.publish(FATAL, "{}");
        await("the worker ended with the error").dontCatchUncaughtExceptions().atMost(TIMEOUT)
            .until(() -> uncaught.contains(fatal));

        assertStoppedConsuming(queue, db, consumer, log, 1);
      } finally {
        Thread.setDefaultUncaughtExceptionHandler(previous);
        consumer.close();
      }
      assertThat(db.effects(FATAL)).isEqualTo(1); // committed once; the second consumer found a duplicate
    }
  }

  @Test
  void anInterruptEndingTheOnlyWorkerHandsEveryMessageToOtherConsumers() throws Exception {
    try (TestQueue queue = TestQueue.declare("stop-interrupt", RabbitQueueType.CLASSIC);
        TestDatabase db = TestDatabase.fresh("rabbit_stop");
        CapturedLog log = CapturedLog.of(RabbitIdempotentConsumer.class);
        RabbitIdempotentConsumer consumer =
            RabbitIdempotentConsumer.create(queue.config(), pipeline(db, new OutcomeRecorder()))) {
      consumer.start();
      Thread worker = Thread.getAllStackTraces().keySet().stream()
          .filter(t -> t.getName().equals("idem-rabbit-worker-" + queue.name + "-0"))
          .findFirst().orElseThrow();
      worker.interrupt(); // it waits for a delivery: the interrupt ends it
      worker.join(TIMEOUT.toMillis());
      assertThat(worker.isAlive()).isFalse();

      assertStoppedConsuming(queue, db, consumer, log, 0);
    }
  }

  /**
   * The first consumer, not closed, holds nothing: the queue has no consumer, messages published
   * now stay ready, nothing reconnects, and a second consumer processes them.
   */
  private static void assertStoppedConsuming(TestQueue queue, TestDatabase db, RabbitIdempotentConsumer dead,
      CapturedLog log, int returned) throws Exception {
    await("the queue has no consumer left").atMost(TIMEOUT).until(() -> queue.consumers() == 0);
    assertThat(dead.isRunning()).isFalse();

    AFTER.forEach(key -> queue.publish(key, "{}"));
    await("every message ready for other consumers").atMost(TIMEOUT)
        .until(() -> queue.ready() == returned + AFTER.size());
    // three recovery intervals (the configured reconnect period): a reconnect would have come in the first
    Duration reconnectDue = queue.config().recoveryInterval().multipliedBy(3);
    await("no reconnect").during(reconnectDue).atMost(reconnectDue.plus(TIMEOUT))
        .until(() -> queue.consumers() == 0);
    assertThat(queue.consumers()).isZero();
    assertThat(RabbitFixture.shared().connectionPids(queue.config().connectionName())).isEmpty();
    assertThat(queue.ready()).isEqualTo(returned + AFTER.size());

    OutcomeRecorder outcomes = new OutcomeRecorder();
    try (RabbitIdempotentConsumer next = RabbitIdempotentConsumer.create(queue.config(), pipeline(db, outcomes))) {
      next.start();
      await("the second consumer processes them").atMost(TIMEOUT)
          .until(() -> AFTER.stream().allMatch(key -> outcomes.count(key, ProcessingOutcome.PROCESSED) == 1)
              && outcomes.count(FATAL, ProcessingOutcome.DUPLICATE) == returned);
    }
    AFTER.forEach(key -> assertThat(db.effects(key)).as(key).isEqualTo(1));
    assertThat(queue.ready()).isZero();
    assertThat(dead.isRunning()).isFalse();
    assertThat(log.messages(Level.ERROR)).filteredOn(m -> m.contains("stopped consuming")).hasSize(1);
  }
}
