package io.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.IdempotentConsumer;
import io.idem.ProcessingOutcome;
import io.idem.fixtures.RabbitFixture;
import io.idem.testkit.OutcomeRecorder;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The broker closes the consumer's connection ({@code rabbitmqctl close_connection}) while a
 * handler runs. The handler's transaction still commits, but its delivery tag belonged to the
 * lost channel: the adapter does not ack it (not on the dead channel, and never on the new one).
 * RabbitMQ requeued the delivery; the reconnected consumer receives it again and acks it as a
 * duplicate. Per message ({@code maxBatchSize(1)}), messages prefetched on the lost channel are
 * processed once, on the new one; in batch mode (the default) the whole batch in flight comes back,
 * committed, and every delivery of it is acked as a duplicate.
 */
class RabbitConnectionLossIT {
  private static final String HELD = "held-1";
  private static final List<String> OTHERS = List.of("after-1", "after-2", "after-3");

  @ParameterizedTest
  @EnumSource(RabbitQueueType.class)
  void connectionClosedByBrokerWhileHandlerRunsIsRedeliveredAndAppliedOnce(RabbitQueueType type)
      throws Exception {
    RabbitFixture rabbit = RabbitFixture.shared();
    try (TestQueue queue = TestQueue.declare("conn-loss", type);
        TestDatabase db = TestDatabase.fresh("rabbit_loss")) {
      queue.publish(HELD, "{\"held\":true}");
      OTHERS.forEach(key -> queue.publish(key, "{}"));

      HoldingHandler handler = new HoldingHandler(HELD, null);
      OutcomeRecorder outcomes = new OutcomeRecorder();
      IdempotentConsumer<SqlSession> pipeline = pipeline(db, handler, outcomes);
      String connectionName = "idem-test-" + queue.name + "-loss";
      // per-message mode: in batch mode the others run in held-1's batch (see the test below)
      RabbitConsumerConfig config = queue.configBuilder().connectionName(connectionName).maxBatchSize(1).build();

      try (RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(config, pipeline)) {
        consumer.start();
        assertThat(handler.entered.await(30, TimeUnit.SECONDS)).as("handler of " + HELD + " entered").isTrue();
        List<String> before = rabbit.connectionPids(connectionName);
        assertThat(before).hasSize(1);

        assertThat(rabbit.closeConnections(connectionName, "idem test: connection lost mid-handler"))
            .isEqualTo(1);
        // the adapter noticed the loss and opened a new connection, while the handler still runs
        await("reconnected").atMost(Duration.ofSeconds(30)).until(() -> {
          List<String> now = rabbit.connectionPids(connectionName);
          return now.size() == 1 && !before.contains(now.get(0));
        });
        handler.release.countDown();

        await("redelivery of " + HELD + " acked as a duplicate").atMost(Duration.ofSeconds(30))
            .until(() -> outcomes.count(HELD, ProcessingOutcome.DUPLICATE) == 1);
        await("other messages").atMost(Duration.ofSeconds(30))
            .until(() -> OTHERS.stream().allMatch(k -> db.effects(k) == 1));
        // the first delivery committed, but its ack was refused: no outcome was reported for it
        assertThat(outcomes.count(HELD, ProcessingOutcome.PROCESSED)).isZero();
        assertThat(consumer.isRunning()).isTrue();
      }

      assertThat(db.effects(HELD)).isEqualTo(1);
      assertThat(db.totalEffects()).isEqualTo(1 + OTHERS.size());
      assertThat(outcomes.count(ProcessingOutcome.PROCESSED)).isEqualTo(OTHERS.size());
      assertThat(queue.ready()).isZero();
      assertThat(queue.deadLetters()).isEmpty();
      if (type == RabbitQueueType.QUORUM) {
        // RabbitMQ counted the return caused by the lost channel
        assertThat(outcomes.settled()).filteredOn(s -> HELD.equals(s.key()))
            .extracting(OutcomeRecorder.Settled::attempt).containsExactly(2);
      }
    }
  }

  @ParameterizedTest
  @EnumSource(RabbitQueueType.class)
  void connectionClosedByBrokerDuringABatchReturnsTheWholeBatchWhichIsAckedAsDuplicates(RabbitQueueType type)
      throws Exception {
    RabbitFixture rabbit = RabbitFixture.shared();
    try (TestQueue queue = TestQueue.declare("conn-loss-batch", type);
        TestDatabase db = TestDatabase.fresh("rabbit_loss")) {
      RabbitBatchIT.Gate gate = new RabbitBatchIT.Gate();
      HoldingHandler handler = new HoldingHandler(HELD, gate);
      OutcomeRecorder outcomes = new OutcomeRecorder();
      IdempotentConsumer<SqlSession> pipeline = pipeline(db, handler, outcomes);
      String connectionName = "idem-test-" + queue.name + "-loss";
      RabbitConsumerConfig config = queue.configBuilder().connectionName(connectionName).build();
      assertThat(config.maxBatchSize()).as("the default: batch mode").isEqualTo(RabbitConsumerConfig.DEFAULT_MAX_BATCH_SIZE);
      List<String> batch = new java.util.ArrayList<>(List.of(HELD));
      batch.addAll(OTHERS);

      try (RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(config, pipeline)) {
        consumer.start();
        gate.batchBehind(queue, consumer, batch); // the next batch: held-1, then the others
        assertThat(handler.entered.await(30, TimeUnit.SECONDS)).as("handler of " + HELD + " entered").isTrue();
        List<String> before = rabbit.connectionPids(connectionName);
        assertThat(before).hasSize(1);

        assertThat(rabbit.closeConnections(connectionName, "idem test: connection lost mid-batch"))
            .isEqualTo(1);
        await("reconnected").atMost(Duration.ofSeconds(30)).until(() -> {
          List<String> now = rabbit.connectionPids(connectionName);
          return now.size() == 1 && !before.contains(now.get(0));
        });
        handler.release.countDown(); // the batch commits; its tags belong to the lost channel

        await("the whole batch redelivered and acked as duplicates").atMost(Duration.ofSeconds(30))
            .until(() -> batch.stream().allMatch(k -> outcomes.count(k, ProcessingOutcome.DUPLICATE) == 1));
        assertThat(consumer.isRunning()).isTrue();
      }

      assertThat(batch).allSatisfy(key -> assertThat(db.effects(key)).as("effects of %s", key).isEqualTo(1));
      assertThat(db.totalEffects()).as("the batch and the gate").isEqualTo(batch.size() + 1);
      // the committed batch's acks were refused (its channel was gone): no outcome reported for them
      assertThat(batch).allSatisfy(key -> assertThat(outcomes.count(key, ProcessingOutcome.PROCESSED)).isZero());
      assertThat(outcomes.count(ProcessingOutcome.PROCESSED)).as("the gate only").isEqualTo(1);
      assertThat(queue.ready()).isZero();
      assertThat(queue.deadLetters()).isEmpty();
      if (type == RabbitQueueType.QUORUM) {
        // RabbitMQ counted the return of every delivery of the batch
        assertThat(outcomes.settled()).filteredOn(s -> batch.contains(s.key()))
            .extracting(OutcomeRecorder.Settled::attempt).containsOnly(2).hasSize(batch.size());
      }
    }
  }

  private static IdempotentConsumer<SqlSession> pipeline(TestDatabase db, HoldingHandler handler,
      OutcomeRecorder outcomes) {
    return IdempotentConsumer.builder(db.store).consumerGroup("loss").handler(handler).listener(outcomes).build();
  }
}
