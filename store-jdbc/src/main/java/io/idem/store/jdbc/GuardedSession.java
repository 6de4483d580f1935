package io.idem.store.jdbc;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.util.Set;
import org.apache.ibatis.session.SqlSession;
import org.jspecify.annotations.Nullable;

/**
 * The {@link SqlSession} a handler receives: everything passes through to the store's session
 * except ending the transaction. Idem owns the transaction — a handler that committed part of its
 * work and then failed would leave the marker committed and the rest lost, and one that rolled
 * back would drop the marker before the store's commit — so {@code commit}, {@code rollback},
 * {@code close} (on the session and on {@link SqlSession#getConnection()}) and
 * {@code setAutoCommit} throw {@link IllegalStateException}, which rolls the whole transaction
 * back like any handler failure. Savepoints stay available.
 *
 * <p>SQL text that ends the transaction ({@code COMMIT}, {@code END}, {@code ROLLBACK}, a mapper
 * annotated with them) cannot be refused here; the store detects it from the transaction id
 * recorded in the session's {@link OpenTransaction} (see {@link MyBatisProcessedEventStore}).
 */
final class GuardedSession {
  private static final String REFUSED =
      "Idem owns this transaction: a handler must not commit, roll back or close it, nor change"
          + " its auto-commit mode; throw an exception to roll it back";
  private static final Set<String> SESSION_REFUSED = Set.of("commit", "rollback", "close");
  private static final Set<String> CONNECTION_REFUSED =
      Set.of("commit", "setAutoCommit", "close", "abort");

  private GuardedSession() {}

  /**
   * Wraps {@code session}, carrying {@code transaction} (what the store's claim records about it);
   * the store keeps the original session to commit or roll back.
   */
  static SqlSession wrap(SqlSession session, OpenTransaction transaction) {
    return (SqlSession) Proxy.newProxyInstance(
        SqlSession.class.getClassLoader(), new Class<?>[] {SqlSession.class},
        new SessionHandler(session, transaction));
  }

  /**
   * The {@link OpenTransaction} of a session made by {@link #wrap}, or {@code null} for any other
   * session (one the caller opened itself).
   */
  static @Nullable OpenTransaction transactionOf(SqlSession session) {
    if (Proxy.isProxyClass(session.getClass())
        && Proxy.getInvocationHandler(session) instanceof SessionHandler handler) {
      return handler.transaction;
    }
    return null;
  }

  /**
   * The store's own session under a session made by {@link #wrap} (its connection without the
   * guard's proxy, for the store's statements), or {@code session} itself for any other session.
   */
  static SqlSession unguarded(SqlSession session) {
    if (Proxy.isProxyClass(session.getClass())
        && Proxy.getInvocationHandler(session) instanceof SessionHandler handler) {
      return handler.session;
    }
    return session;
  }

  private static final class SessionHandler implements InvocationHandler {
    private final SqlSession session;
    private final OpenTransaction transaction;

    SessionHandler(SqlSession session, OpenTransaction transaction) {
      this.session = session;
      this.transaction = transaction;
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
