package io.idem.jms;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.IdempotentConsumer;
import io.idem.NonRetryableException;
import io.idem.fixtures.PostgresFixture;
import io.idem.jms.JmsTestDatabase.Effects;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.testkit.CrashInjector;
import io.idem.testkit.CrashPoint;
import jakarta.jms.Connection;
import jakarta.jms.JMSException;
import jakarta.jms.MessageProducer;
import jakarta.jms.Queue;
import jakarta.jms.Session;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory;
import org.apache.ibatis.session.SqlSession;

/**
 * The crash test's victim, run in a child JVM: consumes the queue with one worker and a
 * {@link CrashInjector} configured by {@code -Didem.crash.point} / {@code -Didem.crash.after},
 * which halts the JVM mid-flight. Arguments: JMS URL, queue, dead-letter queue, schema, consumer
 * group, effects run id. {@code -Didem.jms.maxBatchSize} (default 1, per-message mode) sets the
 * batch size, {@code -Didem.jms.sessionMode} (default TRANSACTED) the session mode. A message with
 * the header {@code x-fail} fails its handler with a {@link NonRetryableException}; the JVM halts at
 * {@link CrashPoint#DEAD_LETTER_COPY_STORED} once a producer's {@code send} returned.
 */
public final class JmsCrashVictim {
  private JmsCrashVictim() {}

  public static void main(String[] args) throws Exception {
    String url = args[0];
    String queue = args[1];
    String deadLetterQueue = args[2];
    String schema = args[3];
    String group = args[4];
    String run = args[5];
    HikariDataSource dataSource = PostgresFixture.shared().dataSource(schema, 4);
    MyBatisProcessedEventStore store =
        MyBatisProcessedEventStore.builder(JmsTestDatabase.sessions(dataSource))
            .createTableIfMissing(true).build();
    Effects effects = new Effects(dataSource, run);
    CrashInjector crashes = CrashInjector.fromSystemProperties();
    IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(store)
        .consumerGroup(group)
        .handler((message, session) -> {
          if (message.header("x-fail") != null) {
            throw new NonRetryableException("poison " + message.header("idempotency-key"));
          }
          effects.record(session, message.header("idempotency-key"));
        })
        .retryPolicy(JmsTestDatabase.attempts(5))
        .listener(crashes)
        .build();
    JmsIdempotentConsumer consumer = JmsIdempotentConsumer.create(
        JmsConsumerConfig.builder(interceptingCommits(url, deadLetterQueue, crashes), queue, deadLetterQueue)
            .receiveTimeout(Duration.ofMillis(200))
            .maxBatchSize(Integer.getInteger("idem.jms.maxBatchSize", 1))
            .sessionMode(JmsSessionMode.valueOf(System.getProperty("idem.jms.sessionMode", "TRANSACTED")))
            .build(),
        pipeline);
    consumer.start();
    System.out.println("VICTIM-STARTED");
    Thread.sleep(60_000); // the injector halts the JVM long before this
    System.out.println("VICTIM-DID-NOT-CRASH");
    consumer.close();
    System.exit(3);
  }

  /**
   * Artemis' factory (so the adapter still reads the broker's limits) whose sessions halt the JVM
   * at {@link CrashPoint#DURING_ACK} once {@code Session.commit()} returned from the broker: the
   * consumed message is settled, the adapter never learned it.
   */
  @SuppressWarnings("serial")
  private static ActiveMQConnectionFactory interceptingCommits(
      String url, String deadLetterQueue, CrashInjector crashes) {
    return new ActiveMQConnectionFactory(url) {
      @Override
      public Connection createConnection() throws JMSException {
        return intercepted(super.createConnection(), deadLetterQueue, crashes);
      }

      @Override
      public Connection createConnection(String user, String password) throws JMSException {
        return intercepted(super.createConnection(user, password), deadLetterQueue, crashes);
      }
    };
  }

  private static Connection intercepted(Connection real, String deadLetterQueue, CrashInjector crashes) {
    if (Proxy.isProxyClass(real.getClass())) {
      return real; // createConnection() may go through createConnection(user, password)
    }
    return proxy(Connection.class, real, (method, result) -> method.equals("createSession")
        ? proxy(Session.class, (Session) result, (m, r) -> {
            if (m.equals("commit")) {
              crashes.atBrokerOperation(CrashPoint.DURING_ACK, "commit");
            }
            if (m.equals("createProducer") && ((MessageProducer) r).getDestination() instanceof Queue q
                && deadLetterQueue.equals(q.getQueueName())) { // the copy sent, not yet acked
              return proxy(MessageProducer.class, (MessageProducer) r, (pm, pr) -> {
                if (pm.equals("send")) {
                  crashes.atBrokerOperation(CrashPoint.DEAD_LETTER_COPY_STORED, "send");
                }
                return pr;
              });
            }
            return r;
          })
        : result);
  }

  private interface After {
    Object after(String method, Object result) throws Exception;
  }

  private static <T> T proxy(Class<T> type, T real, After after) {
    return type.cast(Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, (p, method, args) -> {
      Object result;
      try {
        result = method.invoke(real, args);
      } catch (InvocationTargetException e) {
        throw e.getCause();
      }
      return after.after(method.getName(), result);
    }));
  }
}
