package io.idem.store.jdbc;

import io.idem.StoreUnavailableException;
import io.idem.TransactionRetryException;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import org.apache.ibatis.session.SqlSession;
import org.jspecify.annotations.Nullable;

/**
 * Decides, once, what a failed transaction of {@link MyBatisProcessedEventStore#inTransaction}
 * throws (docs/FAILURES.md): "outage" is decided from the store's own connection, never from a
 * cause chain holding a socket exception. 40001 and 40P01 in the chain are a {@link
 * TransactionRetryException} only when the store's own transaction raised them — pgjdbc's state of
 * its connection, read before the rollback with no round trip, is "failed" (a statement of Idem's
 * session failed) or "idle" (the COMMIT failed); on another driver, always. Raised elsewhere — the
 * handler's own connection or pool, while Idem's transaction is still open and healthy — they are
 * the handler's failure, an attempt (docs/FAILURES.md): a handler that loses every time on its own
 * connection must not loop uncounted. Otherwise, while the transaction's connection is still valid
 * ({@link Connection#isValid}) the failure is the work's, unchanged; when that connection broke, a
 * fresh connection tells whether the server ended the handler's session (it works: the work's
 * failure) or the database is away (it fails too: a {@link StoreUnavailableException}).
 *
 * <p>Stateless; thread-safe. The probes cost round trips only on the
 * failure path.
 */
final class FailureClassifier {
  /** Seconds {@link Connection#isValid(int)} may take when a failure is classified. */
  static final int VALIDATION_TIMEOUT_SECONDS = 5;

  private final Supplier<SqlSession> freshSession;
  private final CheckedCommit commit;
  private final Dialect dialect;

  /**
   * @param freshSession opens a new session of the store's factory, outside any transaction
   * @param commit removes a marker committed early, once the failure is classified
   */
  FailureClassifier(Supplier<SqlSession> freshSession, CheckedCommit commit) {
    this(freshSession, commit, Dialect.POSTGRESQL);
  }

  /**
   * @param dialect which errors ask for a retry ({@link Dialect#asksForRetry}): on MariaDB 1213
   *     (deadlock) and 1205 (lock wait timeout) too
   */
  FailureClassifier(Supplier<SqlSession> freshSession, CheckedCommit commit, Dialect dialect) {
    this.freshSession = freshSession;
    this.commit = commit;
    this.dialect = dialect;
  }

  /**
   * Rolls back, removes a marker committed early, and decides what {@code failure} means: the
   * exception {@link MyBatisProcessedEventStore#inTransaction} throws.
   */
  Exception failed(SqlSession session, OpenTransaction transaction, Throwable failure) {
    boolean ours = raisedOnOurTransaction(session);
    rollback(session, failure);
    Throwable classified = classify(session, transaction, failure, ours);
    if (!transaction.claims().isEmpty()) {
      commit.removeEarlyMarkers(session, transaction, classified);
    }
    if (classified instanceof Error error) {
      throw error;
    }
    return (Exception) classified;
  }

  /**
   * Whether a failure may have been raised by the store's own transaction: not when pgjdbc says the
   * transaction is still open and healthy (the failing statement ran on another connection).
   */
  private static boolean raisedOnOurTransaction(SqlSession session) {
    try {
      return DriverTransactions.ofAnyDriver(session.getConnection()) != DriverTransactions.State.OPEN;
    } catch (RuntimeException e) {
      return true;
    }
  }

  private Throwable classify(SqlSession session, OpenTransaction transaction, Throwable failure,
      boolean ours) {
    if (failure instanceof StoreUnavailableException || failure instanceof TransactionRetryException) {
      return failure; // the claim's or the pipeline's own verdict
    }
    if (Thread.currentThread().isInterrupted()) {
      return failure; // shutting down: the pipeline releases the message
    }
    if (dialect == Dialect.MARIADB) {
      SQLException retry = Dialect.find(failure, dialect::asksForRetry);
      if (retry != null && ours) {
        return new TransactionRetryException("MariaDB asked for the transaction to be retried ("
            + dialect.describe(retry) + "): " + TransientFailures.rootMessage(failure), failure);
      }
    } else {
      String retry = sqlStateIn(failure, TransientFailures.RETRY_TRANSACTION);
      if (retry != null && ours) {
        return new TransactionRetryException("PostgreSQL asked for the transaction to be retried"
            + " (SQLSTATE " + retry + "): " + TransientFailures.rootMessage(failure), failure);
      }
    }
    if (isValid(session)) {
      return failure; // the database answers on this very connection: the work failed
    }
    // The connection broke under the work: the server ended this session (its timeouts, an
    // administrator) or the database is unreachable. A fresh connection tells which.
    Throwable fresh = freshConnectionFailure();
    if (fresh == null && transaction.carried()) {
      // the session was carried between two messages of a run, idle in its transaction outside
      // any handler (MyBatisProcessedEventStore#openRun): the server may have ended it then
      // (idle_in_transaction_session_timeout, an administrator, a restart), so it is not this
      // message's attempt. Retried as the database's request; the message is then first of its
      // fetch, on a session of its own, where a handler that breaks its session counts as usual
      return new TransactionRetryException("the session carried from the previous message of the"
          + " run broke and a fresh connection works (the server ended it between the two"
          + " messages?); rolled back: " + TransientFailures.rootMessage(failure), failure);
    }
    if (fresh == null) {
      return failure;
    }
    StoreUnavailableException outage = new StoreUnavailableException("the transaction's connection"
        + " broke and a fresh one fails too (" + TransientFailures.rootMessage(fresh) + "); rolled"
        + " back (a COMMIT that failed this way may or may not have committed: a redelivery finds"
        + " out): " + TransientFailures.rootMessage(failure), failure);
    outage.addSuppressed(fresh);
    return outage;
  }

  /** Whether the transaction's own connection still answers ({@link Connection#isValid}). */
  private static boolean isValid(SqlSession session) {
    try {
      return session.getConnection().isValid(VALIDATION_TIMEOUT_SECONDS);
    } catch (SQLException | RuntimeException e) {
      return false;
    }
  }

  /** Why a fresh session of the factory cannot reach the database, or {@code null} if it can. */
  private @Nullable Throwable freshConnectionFailure() {
    try (SqlSession fresh = freshSession.get()) {
      return fresh.getConnection().isValid(VALIDATION_TIMEOUT_SECONDS)
          ? null
          : new SQLException("a fresh connection is not valid");
    } catch (SQLException | RuntimeException e) {
      return e;
    }
  }

  private static void rollback(SqlSession session, Throwable cause) {
    try {
      session.rollback(true);
    } catch (RuntimeException e) {
      cause.addSuppressed(e);
    }
  }

  /** The first SQLSTATE in {@code states} on an SQLException in the cause chain, or {@code null}. */
  private static @Nullable String sqlStateIn(Throwable failure, Set<String> states) {
    Map<Throwable, Boolean> seen = new IdentityHashMap<>();
    for (Throwable t = failure; t != null && seen.put(t, Boolean.TRUE) == null; t = t.getCause()) {
      if (t instanceof SQLException sql) {
        for (SQLException e = sql; e != null; e = e.getNextException()) {
          if (states.contains(e.getSQLState())) {
            return e.getSQLState();
          }
          if (e.getNextException() == e) {
            break;
          }
        }
      }
    }
    return null;
  }
}
