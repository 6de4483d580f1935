package io.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.IdempotentConsumer;
import io.idem.ProcessingOutcome;
import io.idem.fixtures.RabbitFixture;
import io.idem.testkit.OutcomeRecorder;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The broker closes the consumer's connection ({@code rabbitmqctl close_connection}) while a
 * handler runs. The handler's transaction still commits, but its delivery tag belonged to the
 * lost channel: the adapter does not ack it (not on the dead channel, and never on the new one).
 * RabbitMQ requeued the delivery; the reconnected consumer receives it again and acks it as a
 * duplicate. Messages prefetched on the lost channel are processed once, on the new one.
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

      CountDownLatch entered = new CountDownLatch(1);
      CountDownLatch release = new CountDownLatch(1);
      AtomicInteger heldCalls = new AtomicInteger();
      OutcomeRecorder outcomes = new OutcomeRecorder();
      IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(db.store)
          .consumerGroup("loss")
          .handler((message, session) -> {
            if (HELD.equals(message.header("idempotency-key")) && heldCalls.incrementAndGet() == 1) {
              entered.countDown();
              assertThat(release.await(60, TimeUnit.SECONDS)).isTrue();
            }
            TestDatabase.record(session, String.valueOf(message.header("idempotency-key")),
                message.deliveryAttempt());
          })
          .listener(outcomes)
          .build();
      String connectionName = "idem-test-" + queue.name + "-loss";
      RabbitConsumerConfig config = queue.configBuilder().connectionName(connectionName).build();

      try (RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(config, pipeline)) {
        consumer.start();
        assertThat(entered.await(30, TimeUnit.SECONDS)).as("handler of " + HELD + " entered").isTrue();
        List<String> before = rabbit.connectionPids(connectionName);
        assertThat(before).hasSize(1);

        assertThat(rabbit.closeConnections(connectionName, "idem test: connection lost mid-handler"))
            .isEqualTo(1);
        // the adapter noticed the loss and opened a new connection, while the handler still runs
        await("reconnected").atMost(Duration.ofSeconds(30)).until(() -> {
          List<String> now = rabbit.connectionPids(connectionName);
          return now.size() == 1 && !before.contains(now.get(0));
        });
        release.countDown();

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
}
