package io.idem.jms;

import io.idem.spi.OutboxMessage;
import io.idem.spi.OutboxPublisher;
import jakarta.jms.BytesMessage;
import jakarta.jms.Connection;
import jakarta.jms.ConnectionFactory;
import jakarta.jms.DeliveryMode;
import jakarta.jms.JMSException;
import jakarta.jms.MessageProducer;
import jakarta.jms.Session;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Publishes outbox rows to JMS queues: the row's destination is the queue name, the message a
 * {@code BytesMessage} sent with {@link DeliveryMode#PERSISTENT}, the idempotency key in the
 * {@value JmsHeaderNames#DEFAULT_KEY_PROPERTY} property (where the next Idem consumer's default
 * extractor finds it), the ordering key as {@code JMSXGroupID} (Artemis message groups keep a
 * group on one consumer, in order), extra headers as properties named by {@link
 * JmsHeaderNames#toPropertyName}.
 *
 * <p>A persistent send is synchronous in JMS: {@code send} returns once the broker has stored the
 * message (Artemis' {@code blockOnDurableSend}, on by default). One connection and session,
 * opened on first use and again after a failure; {@link #publish} is synchronized (a JMS session
 * is single-threaded).
 *
 * <p>What the outbox relay makes of its failures: a {@code JMSException} caused by Artemis' not
 * connected, connection timed out, disconnected or unblocked is a destination outage, charged to
 * no row; any other failure is one failed attempt of the row.
 */
public final class JmsOutboxPublisher implements OutboxPublisher {
  private final ConnectionFactory factory;
  private @Nullable Connection connection;
  private @Nullable Session session;
  private @Nullable MessageProducer producer;

  private JmsOutboxPublisher(ConnectionFactory factory) {
    this.factory = factory;
  }

  /** A publisher sending through connections of {@code factory}. */
  public static JmsOutboxPublisher create(ConnectionFactory factory) {
    return new JmsOutboxPublisher(Objects.requireNonNull(factory, "factory"));
  }

  /**
   * Sends the message and returns once the broker stored it.
   *
   * @throws JMSException when the broker refused it or the connection failed (the connection is
   *     closed and opened again on the next publish)
   * @throws IllegalArgumentException when an extra header's name is not a valid JMS property name
   */
  @Override
  public synchronized void publish(OutboxMessage message) throws JMSException {
    try {
      MessageProducer p = producer();
      Session s = Objects.requireNonNull(session);
      BytesMessage jms = s.createBytesMessage();
      jms.writeBytes(message.payload());
      for (Map.Entry<String, String> header : message.headers().entrySet()) {
        jms.setStringProperty(JmsHeaderNames.toPropertyName(header.getKey()), header.getValue());
      }
      jms.setStringProperty(JmsHeaderNames.DEFAULT_KEY_PROPERTY, message.idempotencyKey());
      if (message.orderingKey() != null) {
        jms.setStringProperty("JMSXGroupID", message.orderingKey());
      }
      p.send(s.createQueue(message.destination()), jms, DeliveryMode.PERSISTENT,
          jakarta.jms.Message.DEFAULT_PRIORITY, jakarta.jms.Message.DEFAULT_TIME_TO_LIVE);
    } catch (JMSException | RuntimeException e) {
      close();
      throw e;
    }
  }

  private MessageProducer producer() throws JMSException {
    if (producer == null) {
      Connection c = factory.createConnection();
      connection = c;
      session = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
      producer = session.createProducer(null);
    }
    return producer;
  }

  /** Closes the connection (a later publish opens a new one). */
  @Override
  public synchronized void close() {
    Connection c = connection;
    connection = null;
    session = null;
    producer = null;
    if (c != null) {
      try {
        c.close();
      } catch (JMSException ignored) {
        // closing a broken connection: nothing left to release
      }
    }
  }
}
