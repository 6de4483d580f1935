package io.idem.jms;

import io.idem.BrokerConsumer;
import io.idem.IdempotentConsumer;
import io.idem.fixtures.ArtemisFixture;
import io.idem.fixtures.ArtemisFixture.AddressPolicy;
import io.idem.testkit.BrokerHarness;
import io.idem.testkit.DeadLetteredMessage;
import jakarta.jms.BytesMessage;
import jakarta.jms.Connection;
import jakarta.jms.DeliveryMode;
import jakarta.jms.JMSException;
import jakarta.jms.Message;
import jakarta.jms.MessageConsumer;
import jakarta.jms.MessageProducer;
import jakarta.jms.Session;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;

/**
 * A fresh queue {@code name} and dead-letter queue {@code name.dlq} on the {@link ArtemisFixture}
 * broker, with address settings that send the broker's own dead letters to the same queue.
 *
 * <p>Header names are written as JMS property names with {@link JmsHeaderNames#toPropertyName}
 * ({@code idempotency-key} → {@code idempotency_key}), the mapping producers use; dead letters
 * are read back through {@link JmsInboundMessage}, whose dash aliases give the kit its names.
 */
final class JmsHarness implements BrokerHarness {
  final ArtemisFixture artemis = ArtemisFixture.shared();
  final String queue;
  final String deadLetterQueue;
  private final UnaryOperator<JmsConsumerConfig.Builder> customizer;
  private final Connection connection;
  private final List<Message> rawDeadLetters = new ArrayList<>();
  private final List<DeadLetteredMessage> deadLetters = new ArrayList<>();

  JmsHarness(String name) {
    this(name, AddressPolicy.deadLetterTo(name + ".dlq"), b -> b.concurrency(2));
  }

  JmsHarness(String name, UnaryOperator<JmsConsumerConfig.Builder> customizer) {
    this(name, AddressPolicy.deadLetterTo(name + ".dlq"), customizer);
  }

  JmsHarness(String name, AddressPolicy policy, UnaryOperator<JmsConsumerConfig.Builder> customizer) {
    this.queue = name;
    this.deadLetterQueue = name + ".dlq";
    this.customizer = customizer;
    artemis.addressSettings(queue, policy);
    artemis.createQueue(queue);
    artemis.createQueue(deadLetterQueue);
    try {
      connection = artemis.connectionFactory().createConnection();
      connection.start();
    } catch (JMSException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  public String destination() {
    return queue;
  }

  @Override
  public synchronized void publish(Map<String, String> headers, byte[] payload) {
    try (Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE)) {
      BytesMessage message = session.createBytesMessage();
      message.writeBytes(payload);
      for (Map.Entry<String, String> h : headers.entrySet()) {
        message.setStringProperty(JmsHeaderNames.toPropertyName(h.getKey()), h.getValue());
      }
      send(session, message);
    } catch (JMSException e) {
      throw new IllegalStateException("could not publish to " + queue + ": " + e, e);
    }
  }

  /** Sends any message built by {@code build} on a fresh session, persistently. */
  synchronized void publish(MessageBuilder build) {
    try (Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE)) {
      send(session, build.build(session));
    } catch (JMSException e) {
      throw new IllegalStateException("could not publish to " + queue + ": " + e, e);
    }
  }

  interface MessageBuilder {
    Message build(Session session) throws JMSException;
  }

  private void send(Session session, Message message) throws JMSException {
    try (MessageProducer producer = session.createProducer(session.createQueue(queue))) {
      producer.send(message, DeliveryMode.PERSISTENT, Message.DEFAULT_PRIORITY, Message.DEFAULT_TIME_TO_LIVE);
    }
  }

  /** The consumer configuration of {@link #newConsumer}: short timeouts, then the customizer. */
  JmsConsumerConfig config() {
    return customizer.apply(JmsConsumerConfig.builder(artemis.connectionFactory(), queue, deadLetterQueue)
            .receiveTimeout(Duration.ofMillis(200))
            .shutdownTimeout(Duration.ofSeconds(20))
            .reconnectBackoff(Duration.ofMillis(200)))
        .build();
  }

  @Override
  public <C> BrokerConsumer newConsumer(IdempotentConsumer<C> pipeline) {
    return JmsIdempotentConsumer.create(config(), pipeline);
  }

  @Override
  public synchronized List<DeadLetteredMessage> deadLetters() {
    drain();
    return List.copyOf(deadLetters);
  }

  /** The native dead-letter messages drained so far (for JMS-level assertions). */
  synchronized List<Message> rawDeadLetters() {
    drain();
    return List.copyOf(rawDeadLetters);
  }

  private void drain() {
    try (Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
        MessageConsumer consumer = session.createConsumer(session.createQueue(deadLetterQueue))) {
      for (Message m; (m = consumer.receive(100)) != null; ) {
        JmsInboundMessage read = JmsInboundMessage.of(m, deadLetterQueue, Instant.now());
        rawDeadLetters.add(m);
        deadLetters.add(new DeadLetteredMessage(read.headers(), read.payload()));
      }
    } catch (JMSException e) {
      throw new IllegalStateException("could not read " + deadLetterQueue + ": " + e, e);
    }
  }

  @Override
  public long pendingCount() {
    return artemis.messageCount(queue);
  }

  @Override
  public void close() {
    try {
      connection.close();
    } catch (JMSException ignored) {
      // the queues go anyway
    }
    artemis.deleteQueue(queue);
    artemis.deleteQueue(deadLetterQueue);
    artemis.removeAddressSettings(queue);
  }
}
