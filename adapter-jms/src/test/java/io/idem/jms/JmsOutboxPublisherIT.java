package io.idem.jms;

import static org.assertj.core.api.Assertions.assertThat;

import io.idem.InboundMessage;
import io.idem.fixtures.ArtemisFixture;
import io.idem.spi.OutboxPublisher;
import io.idem.testkit.OutboxPublisherCompatibilityKit;
import jakarta.jms.Connection;
import jakarta.jms.DeliveryMode;
import jakarta.jms.Message;
import jakarta.jms.MessageConsumer;
import jakarta.jms.Session;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** JmsOutboxPublisher on the embedded (or configured) Artemis broker. */
class JmsOutboxPublisherIT extends OutboxPublisherCompatibilityKit {
  private final ArtemisFixture artemis = ArtemisFixture.shared();
  private final List<Integer> deliveryModes = new ArrayList<>();

  @Override
  protected OutboxPublisher newPublisher() {
    return JmsOutboxPublisher.create(artemis.connectionFactory());
  }

  @Override
  protected String newDestination(String name) {
    artemis.createQueue(name);
    return name;
  }

  @Override
  protected void deleteDestination(String queue) {
    artemis.deleteQueue(queue);
  }

  @Override
  protected List<InboundMessage> receive(String queue, int count, Duration timeout) throws Exception {
    List<InboundMessage> received = new ArrayList<>();
    long deadline = System.nanoTime() + timeout.toNanos();
    try (Connection c = artemis.connectionFactory().createConnection();
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        MessageConsumer consumer = s.createConsumer(s.createQueue(queue))) {
      c.start();
      while (received.size() < count) {
        long left = Math.max(1, (deadline - System.nanoTime()) / 1_000_000);
        Message m = System.nanoTime() < deadline ? consumer.receive(left) : null;
        if (m == null) {
          break;
        }
        deliveryModes.add(m.getJMSDeliveryMode());
        received.add(JmsInboundMessage.of(m, queue, Instant.now()));
      }
    }
    return received;
  }

  @Test
  void messagesAreSentPersistentWithTheKeyProperty() throws Exception {
    publisher().publish(row("order-9", "order-9", "persistent", java.util.Map.of()));
    List<InboundMessage> received = receive(destination(), 1, receiveTimeout());
    assertThat(deliveryModes).containsExactly(DeliveryMode.PERSISTENT);
    assertThat(received.get(0).unwrap(Message.class).orElseThrow().getStringProperty(JmsHeaderNames.DEFAULT_KEY_PROPERTY))
        .isEqualTo("order-9");
    assertThat(received.get(0).unwrap(Message.class).orElseThrow().getStringProperty("JMSXGroupID")).isEqualTo("order-9");
  }
}
