package io.idem.store.jdbc;

import java.sql.Connection;
import java.sql.SQLException;
import org.jspecify.annotations.Nullable;
import org.postgresql.core.BaseConnection;
import org.postgresql.core.TransactionState;

/**
 * Reads the transaction state that pgjdbc keeps for each connection, without a round trip: the
 * driver updates it from the status byte of every {@code ReadyForQuery} message the server sends
 * (PostgreSQL frontend/backend protocol: {@code I} idle, {@code T} in a transaction, {@code E} in
 * a failed transaction). Used by {@link MyBatisProcessedEventStore#confirmClaim} to tell that the
 * handler swallowed an SQL error (the transaction is then aborted, and its COMMIT would silently
 * roll back) or ended the transaction through the JDBC-invisible route of SQL text.
 *
 * <p>Stateless and thread-safe. Every reference to pgjdbc's classes stays inside this class, so
 * that a store running on another driver only fails {@link #of} (answering {@code null}).
 */
final class DriverTransactions {
  /** What pgjdbc says of the connection's transaction. */
  enum State {
    /** In a transaction that can still commit. */
    OPEN,
    /** In a transaction that failed: every statement but ROLLBACK fails, COMMIT rolls back. */
    FAILED,
    /** Not in a transaction: it was committed or rolled back. */
    IDLE
  }

  private DriverTransactions() {}

  /**
   * The pgjdbc transaction state of {@code connection} (which may be a pool's or Idem's own proxy:
   * it is unwrapped), or {@code null} when the connection is not pgjdbc's.
   */
  static @Nullable State of(Connection connection) {
    BaseConnection pg = unwrap(connection);
    if (pg == null) {
      return null;
    }
    TransactionState state = pg.getTransactionState();
    return switch (state) {
      case OPEN -> State.OPEN;
      case FAILED -> State.FAILED;
      case IDLE -> State.IDLE;
    };
  }

  private static @Nullable BaseConnection unwrap(Connection connection) {
    try {
      return connection.isWrapperFor(BaseConnection.class)
          ? connection.unwrap(BaseConnection.class)
          : null;
    } catch (SQLException | RuntimeException | LinkageError notPgjdbc) {
      return null;
    }
  }
}
