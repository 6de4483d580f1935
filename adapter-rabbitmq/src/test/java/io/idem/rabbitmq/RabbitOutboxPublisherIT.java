package io.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import io.idem.InboundMessage;
import io.idem.fixtures.RabbitFixture;
import io.idem.spi.OutboxPublisher;
import io.idem.testkit.OutboxPublisherCompatibilityKit;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** RabbitOutboxPublisher on the local RabbitMQ, to a quorum queue through the default exchange. */
class RabbitOutboxPublisherIT extends OutboxPublisherCompatibilityKit {
  private static Connection connection;

  @BeforeAll
  static void connect() throws Exception {
    connection = RabbitFixture.shared().connectionFactory().newConnection("idem-test-outbox-publisher");
  }

  @AfterAll
  static void disconnect() throws Exception {
    connection.close();
  }

  @Override
  protected OutboxPublisher newPublisher() {
    return RabbitOutboxPublisher.create(connection, "", Duration.ofSeconds(10));
  }

  @Override
  protected String newDestination(String name) throws Exception {
    String queue = "idem-test-" + name;
    try (Channel ch = connection.createChannel()) {
      ch.queueDeclare(queue, true, false, false, Map.of("x-queue-type", "quorum"));
    }
    return queue;
  }

  @Override
  protected void deleteDestination(String queue) throws Exception {
    try (Channel ch = connection.createChannel()) {
      ch.queueDelete(queue);
    }
  }

  @Override
  protected List<InboundMessage> receive(String queue, int count, Duration timeout) throws Exception {
    BlockingQueue<InboundMessage> arrived = new LinkedBlockingQueue<>();
    List<InboundMessage> received = new ArrayList<>();
    try (Channel ch = connection.createChannel()) {
      ch.basicConsume(queue, true, (tag, d) -> arrived.add(new RabbitInboundMessage(
          queue, d.getEnvelope(), d.getProperties(), d.getBody(), 1, Instant.now())), tag -> {});
      long deadline = System.nanoTime() + timeout.toNanos();
      while (received.size() < count) {
        InboundMessage m = arrived.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        if (m == null) {
          break;
        }
        received.add(m);
      }
    }
    return received;
  }

  @Test
  void aMessageNoQueueTakesIsAFailureNotAConfirm() {
    assertThatThrownBy(() -> publisher().publish(new io.idem.spi.OutboxMessage(
            1, "k", "idem-test-no-such-queue", null, new byte[] {1}, Map.of(), 1, Instant.now())))
        .isInstanceOf(IOException.class)
        .hasMessageContaining("returned as unroutable: 312 NO_ROUTE");
  }
}
