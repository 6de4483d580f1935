package io.idem.benchmarks;

import io.idem.jms.JmsHeaderNames;
import jakarta.jms.Connection;
import jakarta.jms.ConnectionFactory;
import jakarta.jms.Message;
import jakarta.jms.MessageConsumer;
import jakarta.jms.Session;
import java.util.ArrayList;
import java.util.List;

/**
 * The plain JMS consumer: one transacted session. Per message: {@code receive}, {@code INSERT;
 * COMMIT}, then {@code session.commit()}. Batched: a blocking {@code receive}, then up to the
 * batch size with {@code receiveNoWait()} (as Idem's batch mode takes them), one transaction,
 * then one {@code session.commit()} for all of them.
 */
final class RawJmsConsumer extends RawQueueConsumer {
  private final ConnectionFactory factory;
  private final String queue;
  private Connection connection;
  private Session session;
  private MessageConsumer consumer;

  RawJmsConsumer(ConnectionFactory factory, String queue, BenchDatabase db, Progress progress, boolean batched,
      int batchSize) {
    super(queue, db, progress, batched, batchSize);
    this.factory = factory;
    this.queue = queue;
  }

  @Override
  void open() throws Exception {
    connection = factory.createConnection();
    session = connection.createSession(true, Session.SESSION_TRANSACTED);
    consumer = session.createConsumer(session.createQueue(queue));
    connection.start();
  }

  @Override
  void receiveAndApply(EffectsWriter effects) throws Exception {
    Message first = consumer.receive(RECEIVE_WAIT.toMillis());
    if (first == null) {
      return;
    }
    progress.begin();
    long start = System.nanoTime();
    if (!batched) {
      effects.applyOne(orderId(first));
      session.commit();
      progress.settled(1, System.nanoTime() - start);
      return;
    }
    List<String> ids = new ArrayList<>(batchSize);
    ids.add(orderId(first));
    for (Message m; ids.size() < batchSize && (m = consumer.receiveNoWait()) != null; ) {
      ids.add(orderId(m));
    }
    effects.applyAll(ids);
    session.commit();
    progress.settled(ids.size(), System.nanoTime() - start);
  }

  private static String orderId(Message m) throws Exception {
    return m.getStringProperty(JmsHeaderNames.DEFAULT_KEY_PROPERTY);
  }

  @Override
  void shut() {
    try {
      connection.close();
    } catch (Exception e) {
      // closing anyway
    }
  }
}
