package io.idem.jms;

import io.idem.testkit.CrashInjector;
import io.idem.testkit.CrashPoint;
import jakarta.jms.Connection;
import jakarta.jms.JMSException;
import jakarta.jms.MessageProducer;
import jakarta.jms.Queue;
import jakarta.jms.Session;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory;

/**
 * Artemis' connection factory (a subclass, so the adapter still reads the broker's limits) whose
 * sessions call {@link CrashInjector#atBrokerOperation} inside the broker calls of the crash
 * tests' children ({@link JmsCrashVictim}, {@link JmsCrashMatrixFactory}): {@link
 * CrashPoint#DURING_ACK} once {@code Session.commit()} returned from the broker (the consumed
 * message settled, the adapter never learned it), {@link CrashPoint#DEAD_LETTER_COPY_STORED} once
 * a {@code send} to the dead-letter queue returned in a session that is not transacted (a {@code
 * CLIENT_ACKNOWLEDGE} session: the persistent copy stored, the original not acknowledged; in a
 * transacted session the copy is stored only by the commit that also removes the original, so the
 * point does not exist there). {@code Message.acknowledge()} is not wrapped.
 */
@SuppressWarnings("serial")
final class JmsCrashingConnections extends ActiveMQConnectionFactory {
  private final String deadLetterQueue;
  private final transient CrashInjector crashes;

  JmsCrashingConnections(String url, String deadLetterQueue, CrashInjector crashes) {
    super(url);
    this.deadLetterQueue = deadLetterQueue;
    this.crashes = crashes;
  }

  @Override
  public Connection createConnection() throws JMSException {
    return intercepted(super.createConnection());
  }

  @Override
  public Connection createConnection(String user, String password) throws JMSException {
    return intercepted(super.createConnection(user, password));
  }

  private Connection intercepted(Connection real) {
    if (Proxy.isProxyClass(real.getClass())) {
      return real; // createConnection() may go through createConnection(user, password)
    }
    return proxy(Connection.class, real, (method, result) -> method.equals("createSession")
        ? proxy(Session.class, (Session) result, (m, r) -> session((Session) result, m, r))
        : result);
  }

  private Object session(Session real, String method, Object result) throws JMSException {
    if (method.equals("commit")) {
      crashes.atBrokerOperation(CrashPoint.DURING_ACK, "commit");
    }
    if (method.equals("createProducer") && ((MessageProducer) result).getDestination() instanceof Queue q
        && deadLetterQueue.equals(q.getQueueName()) && !real.getTransacted()) {
      return proxy(MessageProducer.class, (MessageProducer) result, (pm, pr) -> {
        if (pm.equals("send")) { // the copy stored, the original not yet acknowledged
          crashes.atBrokerOperation(CrashPoint.DEAD_LETTER_COPY_STORED, "send");
        }
        return pr;
      });
    }
    return result;
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
