package io.idem.store.jdbc;

import java.sql.SQLException;
import java.sql.SQLNonTransientConnectionException;
import java.sql.SQLRecoverableException;
import java.sql.SQLTransientException;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * SQLSTATE helpers, and the one place where a failure is called transient by its SQLSTATE alone:
 * the store's own statements outside a message's transaction — the start-up checks and {@link
 * MyBatisProcessedEventStore#isProcessed} — where no handler ran, so nothing but the database can
 * have failed. Transient: connection errors (SQLSTATE class 08, which pgjdbc gives every I/O
 * failure), insufficient resources (53), operator intervention such as an admin shutdown
 * (57P01–57P05), serialization failure (40001), deadlock (40P01) and lock-not-available (55P03),
 * MariaDB's deadlock (1213) and lock wait timeout (1205), plus the JDBC transient/recoverable
 * exception types. A message's transaction is classified by
 * {@link FailureClassifier} from its connection instead, never here.
 */
final class TransientFailures {
  /** SQLSTATEs after which PostgreSQL documents "retry the whole transaction". */
  static final Set<String> RETRY_TRANSACTION = Set.of("40001", "40P01");

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
    // The driver's own SQLException says the most (pgjdbc: "Connection to 127.0.0.1:5433 refused.
    // Check that the hostname and port are correct…"); the socket exception under it only
    // "Connection refused". Take the innermost SQLException, else the innermost cause.
    Throwable root = failure;
    Throwable sql = failure instanceof SQLException ? failure : null;
    Map<Throwable, Boolean> seen = new IdentityHashMap<>();
    while (root.getCause() != null && seen.put(root, Boolean.TRUE) == null) {
      root = root.getCause();
      if (root instanceof SQLException) {
        sql = root;
      }
    }
    Throwable chosen = sql != null && sql.getMessage() != null ? sql : root;
    String text = String.valueOf(chosen.getMessage());
    int end = text.indexOf('\n');
    return end < 0 ? text : text.substring(0, end);
  }

  private static boolean isTransientSql(SQLException e) {
    if (e instanceof SQLTransientException
        || e instanceof SQLRecoverableException
        || e instanceof SQLNonTransientConnectionException) {
      return true;
    }
    if (e.getErrorCode() == Dialect.ER_LOCK_DEADLOCK || e.getErrorCode() == Dialect.ER_LOCK_WAIT_TIMEOUT) {
      return true; // MariaDB's deadlock and lock wait timeout (pgjdbc's error codes are always 0)
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
