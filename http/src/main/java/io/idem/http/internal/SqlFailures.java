package io.idem.http.internal;

import io.idem.StoreUnavailableException;
import java.sql.SQLException;
import java.sql.SQLNonTransientConnectionException;
import java.sql.SQLRecoverableException;
import java.sql.SQLTransientException;
import java.util.IdentityHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Tells an outage from a configuration error for the stored-response table's own statements
 * (reads, start-up checks, table creation), where no handler ran: SQLSTATE classes 08
 * (connection), 53 (resources), 57P (operator intervention) and the JDBC transient types are an
 * outage, as store-jdbc decides for its own statements. Stateless.
 */
public final class SqlFailures {
  private SqlFailures() {}

  /** {@link StoreUnavailableException} for an outage, {@link IllegalStateException} otherwise. */
  public static RuntimeException failure(String what, Throwable e) {
    String message = what + ": " + rootMessage(e);
    return isOutage(e) ? new StoreUnavailableException(message, e) : new IllegalStateException(message, e);
  }

  /** Whether {@code failure} carries an SQLSTATE of an unreachable database. */
  public static boolean isOutage(Throwable failure) {
    Map<Throwable, Boolean> seen = new IdentityHashMap<>();
    for (Throwable t = failure; t != null && seen.put(t, Boolean.TRUE) == null; t = t.getCause()) {
      if (t instanceof StoreUnavailableException) {
        return true;
      }
      if (t instanceof SQLTransientException || t instanceof SQLRecoverableException
          || t instanceof SQLNonTransientConnectionException) {
        return true;
      }
      if (t instanceof SQLException sql && sql.getSQLState() != null) {
        String state = sql.getSQLState();
        if (state.startsWith("08") || state.startsWith("53") || state.startsWith("57P")) {
          return true;
        }
      }
    }
    return false;
  }

  /** The SQLSTATE of the first SQLException in the cause chain that has one, or {@code null}. */
  public static @Nullable String sqlState(Throwable failure) {
    Map<Throwable, Boolean> seen = new IdentityHashMap<>();
    for (Throwable t = failure; t != null && seen.put(t, Boolean.TRUE) == null; t = t.getCause()) {
      if (t instanceof SQLException sql && sql.getSQLState() != null) {
        return sql.getSQLState();
      }
    }
    return null;
  }

  /** Whether an SQLException in the cause chain has the vendor error code {@code code}. */
  public static boolean hasErrorCode(Throwable failure, int code) {
    Map<Throwable, Boolean> seen = new IdentityHashMap<>();
    for (Throwable t = failure; t != null && seen.put(t, Boolean.TRUE) == null; t = t.getCause()) {
      if (t instanceof SQLException sql && sql.getErrorCode() == code) {
        return true;
      }
    }
    return false;
  }

  /** The innermost cause's message, first line only. */
  public static String rootMessage(Throwable failure) {
    Throwable root = failure;
    Map<Throwable, Boolean> seen = new IdentityHashMap<>();
    while (root.getCause() != null && seen.put(root, Boolean.TRUE) == null) {
      root = root.getCause();
    }
    String text = String.valueOf(root.getMessage());
    int end = text.indexOf('\n');
    return end < 0 ? text : text.substring(0, end);
  }
}
