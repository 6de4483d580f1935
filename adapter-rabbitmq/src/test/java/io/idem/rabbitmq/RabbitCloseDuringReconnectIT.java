package io.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Connection;
import io.idem.ConsumerHealth;
import io.idem.IdempotentConsumer;
import io.idem.fixtures.RabbitFixture;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.api.Test;

/**
 * {@code close()} while the adapter is reconnecting, and the new connection opens only after
 * close() gave up waiting for it: that connection must be closed too, not left consuming (and
 * prefetching) with no worker to process what it receives.
 */
class RabbitCloseDuringReconnectIT {

  @Test
  void aConnectionOpenedAfterCloseIsClosedAndConsumesNothing() throws Exception {
    try (TestQueue queue = TestQueue.declare("close-reconnect", RabbitQueueType.CLASSIC);
        TestDatabase db = TestDatabase.fresh("rabbit_reconnect")) {
      IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(db.store)
          .consumerGroup("close-reconnect")
          .handler(TestDatabase.recordingHandler())
          .build();
      RecordingConnectionFactory factory = new RecordingConnectionFactory();
      String name = "idem-test-" + queue.name;
      RabbitConsumerConfig config = queue.configBuilder().connectionName(name)
          .shutdownTimeout(Duration.ofSeconds(1)).build();
      RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(config, pipeline, factory);
      consumer.start();
      assertThat(queue.consumers()).isEqualTo(1);

      CountDownLatch release = factory.holdNextConnection();
      assertThat(RabbitFixture.shared().closeConnections(name, "idem test: lost during close")).isEqualTo(1);
      assertThat(factory.gateReached.await(30, TimeUnit.SECONDS)).as("reconnect under way").isTrue();
      ConsumerHealth reconnecting = consumer.health();
      assertThat(reconnecting.connected()).isFalse();
      assertThat(reconnecting.isReady()).isFalse();

      consumer.close(); // gives up waiting for the reconnect after shutdownTimeout
      release.countDown();

      await("the reconnect opened its connection and consumed").atMost(Duration.ofSeconds(30))
          .until(() -> factory.ops("basicConsume").size() == 2);
      await("the late connection is closed again").atMost(Duration.ofSeconds(30))
          .until(() -> factory.connections.stream().noneMatch(Connection::isOpen));
      assertThat(queue.consumers()).as("nobody consumes the queue").isZero();
      queue.publish("after-close", "{}");
      assertThat(queue.ready()).isEqualTo(1);
      assertThat(db.totalEffects()).isZero();
    }
  }
}
