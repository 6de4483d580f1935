package io.idem.store.jdbc;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.ibatis.cursor.Cursor;
import org.apache.ibatis.executor.BatchResult;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.ResultHandler;
import org.apache.ibatis.session.RowBounds;
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
 *
 * <p>A plain delegating class, not a reflective proxy: it is made for every transaction and sits
 * under every mapper call of the handler, so it costs one virtual call per method. Only the
 * {@link Connection} a handler asks for is wrapped in a {@link Proxy} (the interface is large and
 * changes between Java versions). Confined to the transaction's thread, like the session.
 */
final class GuardedSession implements SqlSession {
  private static final String REFUSED =
      "Idem owns this transaction: a handler must not commit, roll back or close it, nor change"
          + " its auto-commit mode; throw an exception to roll it back";
  private static final Set<String> CONNECTION_REFUSED =
      Set.of("commit", "setAutoCommit", "close", "abort");

  private final SqlSession session;
  private final OpenTransaction transaction;

  private GuardedSession(SqlSession session, OpenTransaction transaction) {
    this.session = session;
    this.transaction = transaction;
  }

  /**
   * Wraps {@code session}, carrying {@code transaction} (what the store's claim records about it);
   * the store keeps the original session to commit or roll back.
   */
  static SqlSession wrap(SqlSession session, OpenTransaction transaction) {
    return new GuardedSession(session, transaction);
  }

  /**
   * The {@link OpenTransaction} of a session made by {@link #wrap}, or {@code null} for any other
   * session (one the caller opened itself).
   */
  static @Nullable OpenTransaction transactionOf(SqlSession session) {
    return session instanceof GuardedSession guarded ? guarded.transaction : null;
  }

  /**
   * The store's own session under a session made by {@link #wrap} (its connection without the
   * guard's proxy, for the store's statements), or {@code session} itself for any other session.
   */
  static SqlSession unguarded(SqlSession session) {
    return session instanceof GuardedSession guarded ? guarded.session : session;
  }

  private static IllegalStateException refused(String what) {
    return new IllegalStateException(REFUSED + " (" + what + ")");
  }

  @Override
  public void commit() {
    throw refused("SqlSession.commit");
  }

  @Override
  public void commit(boolean force) {
    throw refused("SqlSession.commit");
  }

  @Override
  public void rollback() {
    throw refused("SqlSession.rollback");
  }

  @Override
  public void rollback(boolean force) {
    throw refused("SqlSession.rollback");
  }

  @Override
  public void close() {
    throw refused("SqlSession.close");
  }

  @Override
  public <T> T getMapper(Class<T> type) {
    // mapper calls must come back through this session, not the raw one
    return session.getConfiguration().getMapper(type, this);
  }

  @Override
  public Connection getConnection() {
    return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(),
        new Class<?>[] {Connection.class}, new ConnectionHandler(session.getConnection()));
  }

  @Override
  public <T> T selectOne(String statement) {
    return session.selectOne(statement);
  }

  @Override
  public <T> T selectOne(String statement, Object parameter) {
    return session.selectOne(statement, parameter);
  }

  @Override
  public <E> List<E> selectList(String statement) {
    return session.selectList(statement);
  }

  @Override
  public <E> List<E> selectList(String statement, Object parameter) {
    return session.selectList(statement, parameter);
  }

  @Override
  public <E> List<E> selectList(String statement, Object parameter, RowBounds rowBounds) {
    return session.selectList(statement, parameter, rowBounds);
  }

  @Override
  public <K, V> Map<K, V> selectMap(String statement, String mapKey) {
    return session.selectMap(statement, mapKey);
  }

  @Override
  public <K, V> Map<K, V> selectMap(String statement, Object parameter, String mapKey) {
    return session.selectMap(statement, parameter, mapKey);
  }

  @Override
  public <K, V> Map<K, V> selectMap(String statement, Object parameter, String mapKey, RowBounds rowBounds) {
    return session.selectMap(statement, parameter, mapKey, rowBounds);
  }

  @Override
  public <T> Cursor<T> selectCursor(String statement) {
    return session.selectCursor(statement);
  }

  @Override
  public <T> Cursor<T> selectCursor(String statement, Object parameter) {
    return session.selectCursor(statement, parameter);
  }

  @Override
  public <T> Cursor<T> selectCursor(String statement, Object parameter, RowBounds rowBounds) {
    return session.selectCursor(statement, parameter, rowBounds);
  }

  @Override
  @SuppressWarnings("rawtypes")
  public void select(String statement, Object parameter, ResultHandler handler) {
    session.select(statement, parameter, handler);
  }

  @Override
  @SuppressWarnings("rawtypes")
  public void select(String statement, ResultHandler handler) {
    session.select(statement, handler);
  }

  @Override
  @SuppressWarnings("rawtypes")
  public void select(String statement, Object parameter, RowBounds rowBounds, ResultHandler handler) {
    session.select(statement, parameter, rowBounds, handler);
  }

  @Override
  public int insert(String statement) {
    return session.insert(statement);
  }

  @Override
  public int insert(String statement, Object parameter) {
    return session.insert(statement, parameter);
  }

  @Override
  public int update(String statement) {
    return session.update(statement);
  }

  @Override
  public int update(String statement, Object parameter) {
    return session.update(statement, parameter);
  }

  @Override
  public int delete(String statement) {
    return session.delete(statement);
  }

  @Override
  public int delete(String statement, Object parameter) {
    return session.delete(statement, parameter);
  }

  @Override
  public List<BatchResult> flushStatements() {
    return session.flushStatements();
  }

  @Override
  public void clearCache() {
    session.clearCache();
  }

  @Override
  public Configuration getConfiguration() {
    return session.getConfiguration();
  }

  @Override
  public String toString() {
    return "GuardedSession[" + session + "]";
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
        throw refused("Connection." + name);
      }
      try {
        return method.invoke(connection, args);
      } catch (InvocationTargetException e) {
        throw e.getCause();
      }
    }
  }
}
