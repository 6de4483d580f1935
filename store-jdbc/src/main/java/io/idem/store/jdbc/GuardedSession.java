package io.idem.store.jdbc;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.util.Set;
import org.apache.ibatis.session.SqlSession;

/**
 * The {@link SqlSession} a handler receives: everything passes through to the store's session
 * except ending the transaction. Idem owns the transaction — a handler that committed part of its
 * work and then failed would leave the marker committed and the rest lost, and one that rolled
 * back would drop the marker before the store's commit — so {@code commit}, {@code rollback},
 * {@code close} (on the session and on {@link SqlSession#getConnection()}) and
 * {@code setAutoCommit} throw {@link IllegalStateException}, which rolls the whole transaction
 * back like any handler failure. Savepoints stay available.
 */
final class GuardedSession {
  private static final String REFUSED =
      "Idem owns this transaction: a handler must not commit, roll back or close it, nor change"
          + " its auto-commit mode; throw an exception to roll it back";
  private static final Set<String> SESSION_REFUSED = Set.of("commit", "rollback", "close");
  private static final Set<String> CONNECTION_REFUSED =
      Set.of("commit", "setAutoCommit", "close", "abort");

  private GuardedSession() {}

  /** Wraps {@code session}; the store keeps the original to commit or roll back. */
  static SqlSession wrap(SqlSession session) {
    return (SqlSession) Proxy.newProxyInstance(
        SqlSession.class.getClassLoader(), new Class<?>[] {SqlSession.class}, new SessionHandler(session));
  }

  private static final class SessionHandler implements InvocationHandler {
    private final SqlSession session;

    SessionHandler(SqlSession session) {
      this.session = session;
    }

    @Override
    public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
      String name = method.getName();
      if (SESSION_REFUSED.contains(name)) {
        throw new IllegalStateException(REFUSED + " (SqlSession." + name + ")");
      }
      if (name.equals("getMapper")) {
        // mapper calls must come back through this proxy, not the raw session
        return session.getConfiguration().getMapper((Class<?>) args[0], (SqlSession) proxy);
      }
      if (name.equals("getConnection")) {
        Connection connection = session.getConnection();
        return Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class},
            new ConnectionHandler(connection));
      }
      return call(session, method, args);
    }
  }

  private static final class ConnectionHandler implements InvocationHandler {
    private final Connection connection;

    ConnectionHandler(Connection connection) {
      this.connection = connection;
    }

    @Override
    public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
      String name = method.getName();
      boolean wholeRollback = name.equals("rollback") && (args == null || args.length == 0);
      if (CONNECTION_REFUSED.contains(name) || wholeRollback) {
        throw new IllegalStateException(REFUSED + " (Connection." + name + ")");
      }
      return call(connection, method, args);
    }
  }

  private static Object call(Object target, Method method, Object[] args) throws Throwable {
    try {
      return method.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }
}
