package io.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.IdempotentConsumer;
import io.idem.ProcessingOutcome;
import io.idem.testkit.OutcomeRecorder;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * {@code close()} while a handler runs and more messages wait prefetched: it finishes and acks the
 * in-flight message, leaves the prefetched ones unprocessed and unacknowledged (RabbitMQ returns
 * them to the queue), and the next consumer (the default configuration, batch mode) processes each
 * of them once. In batch mode (the default) {@code close()} finishes the whole batch in flight
 * instead: every delivery of it applied and acked, none returned.
 */
class RabbitGracefulShutdownIT {
  private static final String SLOW = "slow-1";
  private static final List<String> PREFETCHED = List.of("queued-1", "queued-2", "queued-3", "queued-4", "queued-5");

  @ParameterizedTest
  @EnumSource(RabbitQueueType.class)
  void closeFinishesInFlightAndReturnsPrefetchedMessagesUnacked(RabbitQueueType type) throws Exception {
    try (TestQueue queue = TestQueue.declare("shutdown", type);
        TestDatabase db = TestDatabase.fresh("rabbit_shutdown")) {
      queue.publish(SLOW, "{}");
      PREFETCHED.forEach(key -> queue.publish(key, "{}"));
      HoldingHandler slow = new HoldingHandler(SLOW, null);
      OutcomeRecorder first = new OutcomeRecorder();
      IdempotentConsumer<SqlSession> slowPipeline = pipeline(db, slow, first);
      // per-message mode: in batch mode the worker takes the queued messages into the slow one's
      // batch, and close() finishes that whole batch
      RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(
          queue.configBuilder().maxBatchSize(1).prefetch(10).concurrency(1).build(), slowPipeline);
      consumer.start();
      assertThat(slow.entered.await(30, TimeUnit.SECONDS)).isTrue();
      await("all messages prefetched").atMost(Duration.ofSeconds(30)).until(() -> queue.ready() == 0);

      CompletableFuture<Void> closing = CompletableFuture.runAsync(consumer::close);
      await("close started").atMost(Duration.ofSeconds(30)).until(() -> !consumer.isRunning());
      assertThat(closing).as("close waits for the in-flight handler").isNotDone();
      slow.release.countDown();
      closing.get(30, TimeUnit.SECONDS);

      assertThat(db.effects(SLOW)).isEqualTo(1);
      assertThat(first.count(SLOW, ProcessingOutcome.PROCESSED)).isEqualTo(1);
      assertThat(first.settled()).hasSize(1);
      assertThat(PREFETCHED).allSatisfy(key -> assertThat(db.effects(key)).isZero());
      await("prefetched messages returned").atMost(Duration.ofSeconds(30))
          .until(() -> queue.ready() == PREFETCHED.size());

      OutcomeRecorder second = new OutcomeRecorder();
      IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(db.store)
          .consumerGroup("shutdown")
          .handler(TestDatabase.recordingHandler())
          .listener(second)
          .build();
      try (RabbitIdempotentConsumer next = RabbitIdempotentConsumer.create(queue.config(), pipeline)) {
        next.start();
        await("returned messages processed").atMost(Duration.ofSeconds(30))
            .until(() -> second.settled().size() == PREFETCHED.size());
      }
      assertThat(second.count(ProcessingOutcome.PROCESSED)).isEqualTo(PREFETCHED.size());
      // returned, not fresh: RabbitMQ flagged them redelivered (classic) or counted the return (quorum)
      assertThat(second.settled()).extracting(OutcomeRecorder.Settled::attempt).containsOnly(2);
      assertThat(PREFETCHED).allSatisfy(key -> assertThat(db.effects(key)).isEqualTo(1));
      assertThat(db.totalEffects()).isEqualTo(1 + PREFETCHED.size());
      assertThat(queue.ready()).isZero();
    }
  }

  @ParameterizedTest
  @EnumSource(RabbitQueueType.class)
  void closeInBatchModeFinishesAndAcksTheWholeBatchInFlight(RabbitQueueType type) throws Exception {
    try (TestQueue queue = TestQueue.declare("shutdown-batch", type);
        TestDatabase db = TestDatabase.fresh("rabbit_shutdown")) {
      RabbitBatchIT.Gate gate = new RabbitBatchIT.Gate();
      HoldingHandler slow = new HoldingHandler(SLOW, gate);
      OutcomeRecorder outcomes = new OutcomeRecorder();
      IdempotentConsumer<SqlSession> slowPipeline = pipeline(db, slow, outcomes);
      RabbitConsumerConfig config = queue.configBuilder().build();
      assertThat(config.maxBatchSize()).as("the default: batch mode").isEqualTo(RabbitConsumerConfig.DEFAULT_MAX_BATCH_SIZE);
      RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(config, slowPipeline);
      consumer.start();
      List<String> batch = new java.util.ArrayList<>(List.of(SLOW));
      batch.addAll(PREFETCHED);
      gate.batchBehind(queue, consumer, batch); // the next batch: slow-1, then the five queued ones
      assertThat(slow.entered.await(30, TimeUnit.SECONDS)).isTrue();

      CompletableFuture<Void> closing = CompletableFuture.runAsync(consumer::close);
      await("close started").atMost(Duration.ofSeconds(30)).until(() -> !consumer.isRunning());
      assertThat(closing).as("close waits for the batch in flight").isNotDone();
      slow.release.countDown();
      closing.get(30, TimeUnit.SECONDS);

      assertThat(batch).allSatisfy(key -> assertThat(db.effects(key)).as("effects of %s", key).isEqualTo(1));
      assertThat(outcomes.count(ProcessingOutcome.PROCESSED)).isEqualTo(1 + batch.size()); // the gate too
      assertThat(outcomes.settled()).hasSize(1 + batch.size());
      await("nothing returned to the queue").during(Duration.ofSeconds(1)).atMost(Duration.ofSeconds(10))
          .until(() -> queue.ready() == 0);
      assertThat(queue.deadLetters()).isEmpty();
    }
  }

  private static IdempotentConsumer<SqlSession> pipeline(TestDatabase db, HoldingHandler handler,
      OutcomeRecorder outcomes) {
    return IdempotentConsumer.builder(db.store).consumerGroup("shutdown").handler(handler).listener(outcomes).build();
  }
}
