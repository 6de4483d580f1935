package io.idem.benchmarks;

import io.idem.fixtures.ArtemisFixture;
import io.idem.fixtures.ArtemisFixture.AddressPolicy;
import io.idem.jms.JmsConsumerConfig;
import io.idem.jms.JmsHeaderNames;
import io.idem.jms.JmsIdempotentConsumer;
import jakarta.jms.BytesMessage;
import jakarta.jms.Connection;
import jakarta.jms.DeliveryMode;
import jakarta.jms.MessageProducer;
import jakarta.jms.Session;

/**
 * JMS on ActiveMQ Artemis: the fixtures' broker ({@code IDEM_JMS_URL}, else an embedded Artemis in
 * this JVM with persistence off, reached over its tcp acceptor on 127.0.0.1). Per run a queue and
 * its {@code .dlq} (the queue's dead-letter address, {@code max-delivery-attempts} 10). Idem's
 * variants are the README's JMS quick start (a transacted session per worker) with one worker
 * instead of four: every variant here runs on one consumer thread.
 */
final class JmsBench implements BenchBroker {
  private static final int BROKER_MAX_DELIVERY_ATTEMPTS = 10;
  private final ArtemisFixture artemis;

  private JmsBench(ArtemisFixture artemis) {
    this.artemis = artemis;
  }

  /** The fixtures' Artemis; an explicit address is not taken (set {@code IDEM_JMS_URL} instead). */
  static JmsBench connect(@org.jspecify.annotations.Nullable String address) {
    if (address != null) {
      throw new IllegalArgumentException("JMS takes its broker from IDEM_JMS_URL (and IDEM_JMS_USER,"
          + " IDEM_JMS_PASSWORD), else an embedded Artemis; no address option, but one was given: " + address);
    }
    return new JmsBench(ArtemisFixture.shared());
  }

  @Override
  public String name() {
    return "jms";
  }

  @Override
  public String describe() {
    return "JMS: " + artemis.origin();
  }

  @Override
  public String address() {
    return artemis.url();
  }

  @Override
  public int defaultBatchSize() {
    return 10;
  }

  @Override
  public void create(String id) {
    artemis.addressSettings(id, AddressPolicy.deadLetterTo(id + ".dlq")
        .withMaxDeliveryAttempts(BROKER_MAX_DELIVERY_ATTEMPTS));
    artemis.createQueue(id);
    artemis.createQueue(id + ".dlq");
  }

  @Override
  public void publish(String id, OrderStream stream) throws Exception {
    try (Connection connection = artemis.connectionFactory().createConnection()) {
      Session session = connection.createSession(true, Session.SESSION_TRANSACTED);
      MessageProducer producer = session.createProducer(session.createQueue(id));
      producer.setDeliveryMode(DeliveryMode.PERSISTENT);
      int sent = 0;
      for (OrderStream.Order o : stream.records()) {
        BytesMessage message = session.createBytesMessage();
        message.writeBytes(o.payload());
        message.setStringProperty(JmsHeaderNames.DEFAULT_KEY_PROPERTY, o.orderId());
        producer.send(message);
        if (++sent % 500 == 0) {
          session.commit();
        }
      }
      session.commit();
    }
  }

  @Override
  public AutoCloseable start(Variant variant, Run run, BenchDatabase db, Progress progress) throws Exception {
    if (!variant.idem) {
      return new RawJmsConsumer(artemis.connectionFactory(), run.destination(), db, progress, variant.batched(),
          run.maxBatchSize()).start();
    }
    JmsConsumerConfig.Builder config = JmsConsumerConfig.builder(artemis.connectionFactory(), run.destination(),
        run.destination() + ".dlq").concurrency(run.concurrency());
    if (variant.batched()) {
      config.maxBatchSize(run.maxBatchSize());
    } else if (variant == Variant.IDEM_PER_MESSAGE) {
      config.maxBatchSize(1);
    }
    JmsIdempotentConsumer consumer = JmsIdempotentConsumer.create(config.build(),
        Consumers.pipeline(variant, db, run.destination(), progress));
    consumer.start();
    return consumer;
  }

  @Override
  public void delete(String id) {
    try {
      artemis.deleteQueue(id);
      artemis.deleteQueue(id + ".dlq");
      artemis.removeAddressSettings(id);
    } catch (RuntimeException e) {
      System.err.println("could not delete queue " + id + ": " + e);
    }
  }

  @Override
  public void close() {
    // connections are per call; the embedded broker stops with the JVM
  }
}
