package io.idem.jms;

import io.idem.spi.OutboxMessage;
import io.idem.spi.OutboxPublishResult;
import io.idem.spi.OutboxPublisher;
import jakarta.jms.BytesMessage;
import jakarta.jms.Connection;
import jakarta.jms.ConnectionFactory;
import jakarta.jms.DeliveryMode;
import jakarta.jms.JMSException;
import jakarta.jms.MessageProducer;
import jakarta.jms.Session;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
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
 * opened on first use and again after a failure; {@link #publishAll} sends a batch in a transacted
 * session of that connection, committed once. {@link #publish} and {@link #publishAll} are
 * synchronized (a JMS session is single-threaded).
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
  /** The transacted session of {@link #publishAll}, on the same connection. */
  private @Nullable Session txSession;
  private @Nullable MessageProducer txSessionProducer;
  /** Artemis' exceptions that mean the broker is unreachable (as the relay classifies them). */
  private static final Set<String> UNREACHABLE = Set.of(
      "org.apache.activemq.artemis.api.core.ActiveMQNotConnectedException",
      "org.apache.activemq.artemis.api.core.ActiveMQConnectionTimedOutException",
      "org.apache.activemq.artemis.api.core.ActiveMQDisconnectedException",
      "org.apache.activemq.artemis.api.core.ActiveMQUnBlockedException");

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
      send(s, p, message);
    } catch (JMSException | RuntimeException e) {
      close();
      throw e;
    }
  }

  /**
   * Sends the batch in one transacted session: every row's message, then one {@code commit}
   * (the broker stores them all at once, one round trip instead of one per persistent send). A
   * row whose message cannot be built (a header name that is no JMS property name) fails alone
   * before the send and stops its ordering key; the key's later rows are skipped. When a send
   * or the commit fails, the transaction is rolled back (nothing of it was stored) and its rows
   * are sent again one by one, without a transaction, for each row's own outcome; that stops at
   * the first failure that means the broker is unreachable (Artemis' not connected, connection
   * timed out, disconnected, unblocked; a {@code ConnectException}), the rest skipped.
   *
   * @throws JMSException when no connection or session could be opened: nothing was sent
   */
  @Override
  public synchronized List<OutboxPublishResult> publishAll(List<OutboxMessage> messages) throws JMSException {
    Session tx;
    MessageProducer txProducer;
    try {
      producer();
      if (txSession == null) {
        txSession = Objects.requireNonNull(connection).createSession(true, Session.SESSION_TRANSACTED);
        txSessionProducer = txSession.createProducer(null);
      }
      tx = txSession;
      txProducer = Objects.requireNonNull(txSessionProducer);
    } catch (JMSException | RuntimeException e) {
      close();
      throw e;
    }
    Map<Long, OutboxPublishResult> results = new HashMap<>();
    Set<String> stoppedKeys = new HashSet<>();
    List<OutboxMessage> inTransaction = new ArrayList<>();
    boolean failed = false;
    for (OutboxMessage m : messages) {
      if (m.orderingKey() != null && stoppedKeys.contains(m.orderingKey())) {
        continue;
      }
      BytesMessage jms;
      try {
        jms = message(tx, m);
      } catch (IllegalArgumentException e) { // this row's headers: never sendable
        results.put(m.id(), OutboxPublishResult.failed(m, e));
        if (m.orderingKey() != null) {
          stoppedKeys.add(m.orderingKey());
        }
        continue;
      } catch (JMSException | RuntimeException e) {
        failed = true;
        break;
      }
      try {
        txProducer.send(tx.createQueue(m.destination()), jms, DeliveryMode.PERSISTENT,
            jakarta.jms.Message.DEFAULT_PRIORITY, jakarta.jms.Message.DEFAULT_TIME_TO_LIVE);
        inTransaction.add(m);
      } catch (JMSException | RuntimeException e) {
        failed = true;
        break;
      }
    }
    if (!failed) {
      try {
        tx.commit();
        inTransaction.forEach(m -> results.put(m.id(), OutboxPublishResult.sent(m)));
      } catch (JMSException | RuntimeException e) {
        failed = true;
      }
    }
    if (failed) {
      try {
        tx.rollback();
      } catch (JMSException | RuntimeException ignored) {
        // a broken session: nothing of the transaction was stored either way
      }
      oneByOne(messages, results, stoppedKeys);
    }
    List<OutboxPublishResult> ordered = new ArrayList<>(messages.size());
    for (OutboxMessage m : messages) {
      OutboxPublishResult r = results.get(m.id());
      ordered.add(r != null ? r : OutboxPublishResult.skipped(m));
    }
    return ordered;
  }

  /** After a failed transaction: the rows without a result, one persistent send each. */
  private void oneByOne(List<OutboxMessage> messages, Map<Long, OutboxPublishResult> results,
      Set<String> stoppedKeys) {
    for (OutboxMessage m : messages) {
      if (results.containsKey(m.id()) || (m.orderingKey() != null && stoppedKeys.contains(m.orderingKey()))) {
        continue;
      }
      try {
        publish(m);
        results.put(m.id(), OutboxPublishResult.sent(m));
      } catch (JMSException | RuntimeException e) {
        results.put(m.id(), OutboxPublishResult.failed(m, e));
        if (m.orderingKey() != null) {
          stoppedKeys.add(m.orderingKey());
        }
        if (unreachable(e)) {
          return; // every later send would wait for the same broker: the rest skipped
        }
      }
    }
  }

  private static boolean unreachable(Throwable failure) {
    Set<Throwable> seen = new HashSet<>();
    for (Throwable t = failure; t != null && seen.add(t);
        t = t.getCause() != null ? t.getCause() : (t instanceof JMSException j ? j.getLinkedException() : null)) {
      if (t instanceof java.net.ConnectException || UNREACHABLE.contains(t.getClass().getName())) {
        return true;
      }
    }
    return false;
  }

  private static void send(Session s, MessageProducer p, OutboxMessage message) throws JMSException {
    p.send(s.createQueue(message.destination()), message(s, message), DeliveryMode.PERSISTENT,
        jakarta.jms.Message.DEFAULT_PRIORITY, jakarta.jms.Message.DEFAULT_TIME_TO_LIVE);
  }

  private static BytesMessage message(Session s, OutboxMessage message) throws JMSException {
    BytesMessage jms = s.createBytesMessage();
    jms.writeBytes(message.payload());
    for (Map.Entry<String, String> header : message.headers().entrySet()) {
      jms.setStringProperty(JmsHeaderNames.toPropertyName(header.getKey()), header.getValue());
    }
    jms.setStringProperty(JmsHeaderNames.DEFAULT_KEY_PROPERTY, message.idempotencyKey());
    if (message.orderingKey() != null) {
      jms.setStringProperty("JMSXGroupID", message.orderingKey());
    }
    return jms;
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
    txSession = null;
    txSessionProducer = null;
    if (c != null) {
      try {
        c.close();
      } catch (JMSException ignored) {
        // closing a broken connection: nothing left to release
      }
    }
  }
}
