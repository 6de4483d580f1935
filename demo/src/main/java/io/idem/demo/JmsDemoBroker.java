package io.idem.demo;

import io.idem.BrokerConsumer;
import io.idem.IdempotentConsumer;
import io.idem.spi.OutboxPublisher;
import io.idem.spi.Utf8;
import io.idem.fixtures.ArtemisFixture;
import io.idem.fixtures.ArtemisFixture.AddressPolicy;
import io.idem.jms.JmsConsumerConfig;
import io.idem.jms.JmsHeaderNames;
import io.idem.jms.JmsIdempotentConsumer;
import io.idem.jms.JmsInboundMessage;
import io.idem.jms.JmsOutboxPublisher;
import io.idem.jms.JmsSessionMode;
import io.idem.testkit.CrashPoint;
import io.idem.testkit.DeadLetteredMessage;
import jakarta.jms.BytesMessage;
import jakarta.jms.Connection;
import jakarta.jms.ConnectionFactory;
import jakarta.jms.DeliveryMode;
import jakarta.jms.JMSException;
import jakarta.jms.Message;
import jakarta.jms.MessageProducer;
import jakarta.jms.QueueBrowser;
import jakarta.jms.Session;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.Map;
import org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory;
import org.jspecify.annotations.Nullable;

/**
 * The demo on JMS: embedded ActiveMQ Artemis (or {@code IDEM_JMS_URL}), a queue with its
 * {@code .dlq}, transacted sessions. The broker's own {@code max-delivery-attempts} is a high
 * backstop (every SIGKILL returns the in-flight messages and counts as a delivery).
 */
final class JmsDemoBroker implements DemoBroker {
  private static final int BROKER_MAX_DELIVERY_ATTEMPTS = 100;
  /** The consumer process's JMS session mode ({@link JmsSessionMode} name): {@value}. */
  static final String SESSION_MODE_PROPERTY = "idem.demo.jms.session-mode";
  private @Nullable String url;

  JmsDemoBroker(Map<String, String> args) {
    this.url = args.get("jms-url");
  }

  @Override
  public String name() {
    return "jms";
  }

  @Override
  public int defaultMaxBatchSize() {
    return JmsConsumerConfig.DEFAULT_MAX_BATCH_SIZE;
  }

  @Override
  public String start() {
    ArtemisFixture artemis = ArtemisFixture.shared();
    url = artemis.url();
    return "JMS: " + artemis.origin();
  }

  private ConnectionFactory connectionFactory() {
    return url == null ? ArtemisFixture.shared().connectionFactory() : new ActiveMQConnectionFactory(url);
  }

  @Override
  public void createDestination(String queue) {
    ArtemisFixture artemis = ArtemisFixture.shared();
    artemis.addressSettings(queue, AddressPolicy.deadLetterTo(queue + ".dlq")
        .withMaxDeliveryAttempts(BROKER_MAX_DELIVERY_ATTEMPTS)
        .withRedeliveryDelay(Duration.ofMillis(100)));
    artemis.createQueue(queue);
    artemis.createQueue(queue + ".dlq");
  }

  @Override
  public boolean supportsBinaryHeaders() {
    return false;
  }

  @Override
  public void publish(String queue, List<Outbound> messages) {
    try (Connection connection = connectionFactory().createConnection()) {
      Session session = connection.createSession(true, Session.SESSION_TRANSACTED);
      MessageProducer producer = session.createProducer(session.createQueue(queue));
      producer.setDeliveryMode(DeliveryMode.PERSISTENT);
      for (Outbound m : messages) {
        BytesMessage message = session.createBytesMessage();
        message.writeBytes(m.payload());
        for (Map.Entry<String, byte[]> h : m.headers().entrySet()) {
          if (!Utf8.isValid(h.getValue())) {
            throw new IllegalArgumentException("JMS properties are text: header " + h.getKey()
                + " is not valid UTF-8 and cannot be sent");
          }
          // JMS property names are Java identifiers: idempotency-key travels as idempotency_key
          message.setStringProperty(JmsHeaderNames.toPropertyName(h.getKey()),
              new String(h.getValue(), StandardCharsets.UTF_8));
        }
        producer.send(message);
      }
      session.commit();
    } catch (JMSException e) {
      throw new IllegalStateException("publishing to " + queue + " failed: " + e.getMessage(), e);
    }
  }

  @Override
  public List<String> connectionArgs() {
    return List.of("--jms-url=" + url);
  }

  /** Per-message mode ({@code maxBatchSize(1)}). */
  @Override
  public BrokerConsumer consumer(String queue, IdempotentConsumer<?> pipeline) {
    return consumer(queue, pipeline, 1);
  }

  /** Each worker session holds batches of up to {@code maxBatchSize}. */
  @Override
  public BrokerConsumer consumer(String queue, IdempotentConsumer<?> pipeline, int maxBatchSize) {
    return consumer(queue, pipeline, maxBatchSize, null);
  }

  /**
   * With {@code crashes}: the adapter's connections come from its wrapping Artemis factory. The
   * session mode is {@code TRANSACTED} unless {@value #SESSION_MODE_PROPERTY} names another
   * {@link JmsSessionMode} (see {@link #consumerJvmArgs}).
   */
  @Override
  public BrokerConsumer consumer(String queue, IdempotentConsumer<?> pipeline, int maxBatchSize,
      @Nullable BrokerCallCrashes crashes) {
    ConnectionFactory factory = crashes == null || url == null ? connectionFactory() : crashes.jms(url, queue + ".dlq");
    JmsConsumerConfig config = JmsConsumerConfig.builder(factory, queue, queue + ".dlq")
        .sessionMode(JmsSessionMode.valueOf(System.getProperty(SESSION_MODE_PROPERTY, "TRANSACTED")))
        .maxBatchSize(maxBatchSize)
        .concurrency(4)
        .receiveTimeout(Duration.ofMillis(500))
        .shutdownTimeout(Duration.ofSeconds(20))
        .build();
    return JmsIdempotentConsumer.create(config, pipeline);
  }

  /**
   * {@code CLIENT_ACKNOWLEDGE} for {@link CrashPoint#DEAD_LETTER_COPY_STORED}: there the copy is a
   * persistent send the broker confirms, then the original is acknowledged, two operations with
   * the point between them; in the default transacted session both are one commit.
   */
  @Override
  public List<String> consumerJvmArgs(CrashPoint point) {
    return point == CrashPoint.DEAD_LETTER_COPY_STORED
        ? List.of("-D" + SESSION_MODE_PROPERTY + "=" + JmsSessionMode.CLIENT_ACKNOWLEDGE.name())
        : List.of();
  }

  /** Persistent sends on one connection of this broker's factory. */
  @Override
  public OutboxPublisher outboxPublisher() {
    return JmsOutboxPublisher.create(connectionFactory());
  }

  @Override
  public long pending(String queue, String group) {
    return ArtemisFixture.shared().messageCount(queue);
  }

  @Override
  public long deadLettered(String queue) {
    return ArtemisFixture.shared().messageCount(queue + ".dlq");
  }

  @Override
  public List<DeadLetteredMessage> readDeadLetters(String queue) {
    String dlq = queue + ".dlq";
    List<DeadLetteredMessage> out = new ArrayList<>();
    try (Connection connection = connectionFactory().createConnection()) {
      connection.start();
      Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
      QueueBrowser browser = session.createBrowser(session.createQueue(dlq));
      for (Enumeration<?> e = browser.getEnumeration(); e.hasMoreElements(); ) {
        JmsInboundMessage read = JmsInboundMessage.of((Message) e.nextElement(), dlq, Instant.now());
        out.add(new DeadLetteredMessage(read.headers(), read.payload()));
      }
      browser.close();
      return out;
    } catch (JMSException e) {
      throw new IllegalStateException("could not browse " + dlq + ": " + e.getMessage(), e);
    }
  }

  @Override
  public void deleteDestination(String queue) {
    ArtemisFixture.shared().deleteQueue(queue);
    ArtemisFixture.shared().deleteQueue(queue + ".dlq");
    ArtemisFixture.shared().removeAddressSettings(queue);
  }

  @Override
  public void close() {
    // connections are per call
  }

  private String url() {
    if (url == null) {
      throw new IllegalStateException("start() first: no Artemis URL yet");
    }
    return url;
  }
}
