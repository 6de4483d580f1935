package io.idem.store.jdbc;

import io.idem.spi.NextClaim;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.util.List;
import java.util.function.Supplier;
import org.apache.ibatis.session.SqlSession;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The COMMIT of a message's transaction, checked against the transaction that claimed (the id
 * {@link OpenTransaction} recorded from the claim statement), and the clean-up when a handler
 * committed a marker early by SQL text and then failed (docs/FAILURES.md: "the handler cannot
 * commit a marker without its effect").
 *
 * <p>Stateless apart from the table; thread-safe. Logs under the store's name.
 */
final class CheckedCommit {
  private static final Logger LOG = LoggerFactory.getLogger(MyBatisProcessedEventStore.class);

  /** SQLSTATE of a lock wait that ran out of {@code lock_timeout}. */
  private static final String LOCK_NOT_AVAILABLE = "55P03";

  /**
   * What {@link #commitAndClaim} did with the next claim, the COMMIT before it having taken: the
   * transaction begun with it (carried), or none — and then whether the claim's lock wait ran out
   * (another transaction holds that key), so the next record is not made to wait a second time.
   */
  record AfterCommit(@Nullable OpenTransaction begun, boolean nextClaimTimedOut) {
    static final AfterCommit NOTHING = new AfterCommit(null, false);
  }

  /** SQLSTATE of the division by zero that the commit check raises on purpose. */
  private static final String DIVISION_BY_ZERO = "22012";

  /**
   * The check and the COMMIT, one text for every message: the claiming transaction id is a bound
   * parameter, so pgjdbc parses it once per connection and, after {@code prepareThreshold} uses,
   * runs it as a server-prepared statement. pgjdbc sends the two statements of a multi-statement
   * PreparedStatement in one round trip (Parse/Bind/Execute for each, one Sync).
   */
  private static final String CHECK_AND_COMMIT =
      "SELECT 1 / coalesce((pg_catalog.txid_current_if_assigned() = ?)::int, 0); COMMIT";

  private final Supplier<SqlSession> freshSession;
  private final TableName table;
  private final Dialect dialect;
  private final MariaDbClaimCheck claimCheck;

  /**
   * @param freshSession opens a new session of the store's factory, outside any transaction
   * @param table the processed-events table
   */
  CheckedCommit(Supplier<SqlSession> freshSession, TableName table) {
    this(freshSession, table, Dialect.POSTGRESQL, new MariaDbClaimCheck(table));
  }

  /**
   * @param dialect the database: early markers are removed on PostgreSQL only (by {@code xmin})
   * @param claimCheck the count of the markers sent with the COMMIT on MariaDB
   */
  CheckedCommit(Supplier<SqlSession> freshSession, TableName table, Dialect dialect,
      MariaDbClaimCheck claimCheck) {
    this.freshSession = freshSession;
    this.table = table;
    this.dialect = dialect;
    this.claimCheck = claimCheck;
  }

  /**
   * Commits. When the transaction claimed a key on pgjdbc, the COMMIT travels in the same round
   * trip ({@link #CHECK_AND_COMMIT}, the id bound as a parameter) as a check that the transaction committing is the one that claimed:
   * {@code txid_current_if_assigned()} is the claim's id unless the handler ended the transaction
   * by SQL text (after which pgjdbc silently began a new one). A mismatch divides by zero at run
   * time (the divisor depends on the function's result, so the planner cannot fold it), the
   * server skips the COMMIT (an error discards the rest of the round trip up to its Sync), and
   * the statement fails with 22012. pgjdbc then sees the transaction idle and
   * {@code session.commit(true)} sends nothing.
   *
   * <p>The statements queued by {@link MyBatisProcessedEventStore#executeBeforeCommit} go first in
   * that round trip, in order, their parameters bound before the transaction id: one
   * PreparedStatement, one Sync. If one of them fails, PostgreSQL skips the rest of the round trip
   * — the check and the COMMIT with it — and the transaction, aborted, is rolled back: they commit
   * with it or not at all, and their failure is thrown unchanged (classified by {@link
   * FailureClassifier} as every failure of the transaction).
   */
  void commit(SqlSession session, OpenTransaction transaction) throws SQLException {
    session.flushStatements();
    long txid = transaction.claimTxid();
    Connection connection = session.getConnection();
    if (sendsCheck(transaction, connection)) {
      List<OpenTransaction.BeforeCommit> before = transaction.statementsBeforeCommit();
      String sql = CHECK_AND_COMMIT;
      if (!before.isEmpty()) {
        StringBuilder text = new StringBuilder();
        for (OpenTransaction.BeforeCommit statement : before) {
          text.append(statement.sql()).append("; ");
        }
        sql = text.append(CHECK_AND_COMMIT).toString();
      }
      try (PreparedStatement check = connection.prepareStatement(sql)) {
        int index = 1;
        for (OpenTransaction.BeforeCommit statement : before) {
          for (Object value : statement.parameters()) {
            bind(check, index++, value);
          }
        }
        check.setLong(index, txid);
        check.execute();
      } catch (SQLException e) {
        if (DIVISION_BY_ZERO.equals(e.getSQLState())) {
          throw new HandlerEndedTransaction(e);
        }
        throw e;
      }
    }
    if (transaction.confirmsAtCommit()) {
      // MariaDB: the markers of the keys confirmed after the handlers, counted in the COMMIT's round
      // trip; Connector/J then knows the transaction ended and session.commit sends nothing
      List<MariaDbClaimCheck.Key> keys = transaction.confirmedAtCommit();
      if (!claimCheck.checkAndCommit(connection, keys)) {
        throw MyBatisProcessedEventStore.claimsLost(keys);
      }
    }
    // force: the handler may have written through session.getConnection(), which MyBatis does
    // not see as dirty; without force the commit would be skipped. After the check above pgjdbc
    // is idle and sends nothing.
    session.commit(true);
  }

  /**
   * Whether {@link #commit} sends the check with the COMMIT (the transaction claimed, on pgjdbc),
   * and so can carry statements before it ({@link MyBatisProcessedEventStore#executeBeforeCommit}).
   */
  static boolean sendsCheck(OpenTransaction transaction, Connection connection) {
    return transaction.claimTxid() != OpenTransaction.NO_CLAIM && DriverTransactions.ofAnyDriver(connection) != null;
  }

  /** Binds one parameter of a statement sent before the COMMIT. */
  static void bind(PreparedStatement statement, int index, @Nullable Object value) throws SQLException {
    if (value == null) {
      statement.setNull(index, Types.NULL);
    } else if (value instanceof byte[] bytes) {
      statement.setBytes(index, bytes);
    } else {
      statement.setObject(index, value);
    }
  }

  /**
   * Commits, and in the same round trip begins the next transaction of a run with the claim of
   * {@code next} ({@link MyBatisProcessedEventStore#openRun()}): {@link #CHECK_AND_COMMIT} (or a
   * plain COMMIT when this transaction claimed nothing new), then {@code BEGIN} and the claim
   * statement, four statements under one Sync. An error discards the rest of the round trip, so:
   *
   * <ul>
   *   <li>the check failed (22012): nothing committed; thrown as {@link #commit} throws it;
   *   <li>any other error, when this transaction claimed: PostgreSQL's {@code txid_status} of the
   *       claiming transaction, read after a ROLLBACK, tells whether the COMMIT took. Committed:
   *       the claim of {@code next} failed after it, and {@code null} is returned (nothing carried;
   *       the next transaction claims again on its own). Otherwise, or when the status cannot be
   *       read: thrown, as a failed COMMIT (a COMMIT whose outcome is unknown because the
   *       connection broke is such a failure today too: a redelivery finds out);
   *   <li>any other error when this transaction claimed nothing new (a duplicate): nothing of its
   *       own needed committing; rolled back and {@code null} returned.
   * </ul>
   *
   * @return the transaction begun, holding the claim's answer for {@code next}; or none when this
   *     transaction committed (or had nothing to commit) but nothing is carried, with whether the
   *     claim of {@code next} ran out of its lock timeout
   */
  AfterCommit commitAndClaim(
      SqlSession session, OpenTransaction transaction, ClaimStatement claims, NextClaim next)
      throws SQLException {
    if (!transaction.statementsBeforeCommit().isEmpty()) {
      // never carried (MyBatisProcessedEventStore#carries): their result sets would be counted
      commit(session, transaction);
      return AfterCommit.NOTHING;
    }
    session.flushStatements();
    long txid = transaction.claimTxid();
    Connection connection = session.getConnection();
    boolean check = txid != OpenTransaction.NO_CLAIM;
    String sql = (check ? CHECK_AND_COMMIT : "COMMIT") + "; BEGIN; " + claims.sql();
    String group = next.key().consumerGroup();
    String key = next.key().value();
    byte[] fingerprint = next.payloadFingerprint();
    ClaimStatement.Answer answer = null;
    try (PreparedStatement statement = connection.prepareStatement(sql)) {
      int first = 1;
      if (check) {
        statement.setLong(first++, txid);
      }
      claims.bind(statement, first, group, key, next.key().source().name(), fingerprint);
      // result sets in order: [the check's row,] [the saved lock timeout,] the claim's rows
      answer = ClaimStatement.answerAt(statement, (check ? 1 : 0) + claims.claimResultSet());
    } catch (SQLException e) {
      if (DIVISION_BY_ZERO.equals(e.getSQLState())) {
        throw new HandlerEndedTransaction(e);
      }
      // 55P03 can only come from the claim, which runs after the COMMIT; so can 57014 (a
      // statement_timeout shorter than the claim's lock timeout ends the same wait): either way the
      // next call does not claim and wait again
      boolean timedOut = LOCK_NOT_AVAILABLE.equals(e.getSQLState())
          || ClaimStatement.QUERY_CANCELED.equals(e.getSQLState());
      if (!check) {
        rollBackQuietly(connection);
        return new AfterCommit(null, timedOut);
      }
      if (committed(connection, txid)) {
        LOG.debug("committed; the claim of the next key '{}' sent with the COMMIT failed: {}", key,
            e.toString());
        return new AfterCommit(null, timedOut);
      }
      throw e;
    }
    if (answer == null || DriverTransactions.ofAnyDriver(connection) != DriverTransactions.State.OPEN) {
      rollBackQuietly(connection); // cannot happen on pgjdbc; carry nothing rather than guess
      return AfterCommit.NOTHING;
    }
    // MyBatis did not see this COMMIT: its local cache still holds the committed transaction's reads
    session.clearCache();
    return new AfterCommit(OpenTransaction.preclaimed(group, key, fingerprint, answer), false);
  }

  /**
   * Whether the transaction {@code txid} committed, as PostgreSQL's {@code txid_status} says after
   * the connection's failed transaction is rolled back; {@code false} when that cannot be read.
   */
  private static boolean committed(Connection connection, long txid) {
    try {
      connection.rollback();
      String status;
      try (PreparedStatement query = connection.prepareStatement("SELECT pg_catalog.txid_status(?)")) {
        query.setLong(1, txid);
        try (ResultSet row = query.executeQuery()) {
          status = row.next() ? row.getString(1) : null;
        }
      }
      connection.rollback();
      return "committed".equals(status);
    } catch (SQLException | RuntimeException e) {
      LOG.debug("could not read whether transaction {} committed", txid, e);
      return false;
    }
  }

  private static void rollBackQuietly(Connection connection) {
    try {
      connection.rollback();
    } catch (SQLException | RuntimeException e) {
      LOG.debug("rollback failed; the connection is closed with the session", e);
    }
  }

  /** The commit check found another transaction than the one that claimed. */
  private static final class HandlerEndedTransaction extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    HandlerEndedTransaction(@Nullable Throwable cause) {
      super("the handler ended Idem's transaction (a SQL-text COMMIT, END or ROLLBACK): the"
          + " transaction committing is not the one that claimed the key; the rest is rolled back and"
          + " a marker committed early removed, but what the handler wrote before its own COMMIT or"
          + " END stays committed", cause);
    }
  }

  /**
   * Removes the markers this transaction claimed if the handler committed them early (a SQL-text
   * COMMIT or END, then a failure): one statement, in a short transaction of its own, that
   * deletes only a row whose {@code xmin} is the claiming transaction (PostgreSQL's 32-bit xid,
   * the low half of {@code txid_current()}), so a marker another transaction committed since is
   * never touched. Runs on the transaction's connection when it is valid, else on a fresh one.
   * Failing here is logged and recorded on {@code failure}; it does not change the verdict. On
   * MariaDB nothing is done: no row there says which transaction wrote it.
   */
  void removeEarlyMarkers(SqlSession session, OpenTransaction transaction, Throwable failure) {
    if (dialect != Dialect.POSTGRESQL) {
      // MariaDB keeps no committing transaction's id on the row: a marker the handler committed
      // early by SQL text cannot be told from another instance's (docs/STORE.md, "Databases")
      return;
    }
    long xid = transaction.claimTxid() % 4_294_967_296L;
    String sql = "DELETE FROM " + table.qualified() + " WHERE consumer_group = ? AND"
        + " idempotency_key = ? AND xmin::text::bigint = " + xid + "; COMMIT";
    SqlSession fresh = null;
    try {
      Connection connection;
      if (isOpen(session)) {
        connection = session.getConnection();
      } else {
        fresh = freshSession.get();
        connection = fresh.getConnection();
      }
      int removed = 0;
      for (OpenTransaction.Claimed claimed : transaction.claims()) {
        try (PreparedStatement delete = connection.prepareStatement(sql)) {
          delete.setString(1, claimed.consumerGroup());
          delete.setString(2, claimed.key());
          delete.execute();
          removed += Math.max(0, delete.getUpdateCount());
        }
      }
      if (removed > 0) {
        LOG.warn("removed {} processed-events marker(s) that the handler committed early (a SQL-text"
            + " COMMIT or END) before failing: {}", removed, failure.toString().lines().findFirst().orElse(""));
      }
    } catch (SQLException | RuntimeException e) {
      LOG.error("could not check for a processed-events marker committed early by the handler of"
          + " key '{}'; if the handler COMMITted by SQL text before failing, a redelivery is taken"
          + " for a duplicate: {}", transaction.claims().get(0).key(),
          TransientFailures.rootMessage(e));
      failure.addSuppressed(e);
    } finally {
      if (fresh != null) {
        try {
          fresh.close();
        } catch (RuntimeException e) {
          LOG.debug("closing the session failed; the pool discards the connection", e);
        }
      }
    }
  }

  private static boolean isOpen(SqlSession session) {
    try {
      return !session.getConnection().isClosed();
    } catch (SQLException | RuntimeException e) {
      return false;
    }
  }
}
