package io.idem.store.jdbc;

import java.io.EOFException;
import java.net.SocketException;
import java.sql.SQLException;
import java.sql.SQLNonTransientConnectionException;
import java.sql.SQLRecoverableException;
import java.sql.SQLTransientException;
import java.util.IdentityHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Tells a failure of the database (retry later, never the message's fault) from a failure of the
 * work. Transient: connection errors (SQLSTATE class 08), insufficient resources (53), operator
 * intervention such as an admin shutdown (57P01–57P05), serialization failure (40001) and
 * deadlock (40P01) — PostgreSQL's "retry the whole transaction" answers — and lock-not-available
 * (55P03), plus the JDBC transient/recoverable exception types and socket failures underneath.
 */
final class TransientFailures {
  private TransientFailures() {}

  static boolean isTransient(Throwable failure) {
    Map<Throwable, Boolean> seen = new IdentityHashMap<>();
    for (Throwable t = failure; t != null && seen.put(t, Boolean.TRUE) == null; t = t.getCause()) {
      if (t instanceof SQLException sql) {
        for (SQLException e = sql; e != null; e = e.getNextException()) {
          if (isTransientSql(e)) {
            return true;
          }
          if (e.getNextException() == e) {
            break;
          }
        }
      }
      if (t instanceof SocketException || t instanceof EOFException) {
        return true;
      }
    }
    return false;
  }

  /** The SQLSTATE of the first SQLException in the cause chain, or {@code null}. */
  static @Nullable String sqlState(Throwable failure) {
    Map<Throwable, Boolean> seen = new IdentityHashMap<>();
    for (Throwable t = failure; t != null && seen.put(t, Boolean.TRUE) == null; t = t.getCause()) {
      if (t instanceof SQLException sql && sql.getSQLState() != null) {
        return sql.getSQLState();
      }
    }
    return null;
  }

  /** The innermost cause's message, on one line (MyBatis wraps SQL errors in multi-line text). */
  static String rootMessage(Throwable failure) {
    Throwable root = failure;
    Map<Throwable, Boolean> seen = new IdentityHashMap<>();
    while (root.getCause() != null && seen.put(root, Boolean.TRUE) == null) {
      root = root.getCause();
    }
    String text = String.valueOf(root.getMessage());
    int end = text.indexOf('\n');
    return end < 0 ? text : text.substring(0, end);
  }

  private static boolean isTransientSql(SQLException e) {
    if (e instanceof SQLTransientException
        || e instanceof SQLRecoverableException
        || e instanceof SQLNonTransientConnectionException) {
      return true;
    }
    String state = e.getSQLState();
    if (state == null) {
      return false;
    }
    return state.startsWith("08")
        || state.startsWith("53")
        || state.startsWith("57P")
        || state.equals("40001")
        || state.equals("40P01")
        || state.equals("55P03");
  }
}
