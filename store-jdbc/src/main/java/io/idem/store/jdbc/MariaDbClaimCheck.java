package io.idem.store.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * "The transaction is still the claim's" on MariaDB, for any number of keys in one statement: the
 * markers of the keys are counted in the transaction, and a count short of the number of keys
 * means InnoDB rolled the claiming transaction back under the handler (a deadlock, 1213, or a lock
 * wait timeout with {@code innodb_rollback_on_timeout}, that the handler swallowed; a SQL-text
 * {@code ROLLBACK}): the handler's later statements ran in a new transaction, which must not
 * commit (docs/STORE.md, "Databases").
 *
 * <p>With the COMMIT ({@link #checkAndCommit}): one anonymous compound statement, one round trip,
 * <pre>{@code
 * BEGIN NOT ATOMIC
 *   IF (SELECT count(*) FROM t WHERE (consumer_group = ? AND idempotency_key IN (?, …)) OR …) <> n
 *   THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = '…'; END IF;
 *   COMMIT;
 * END
 * }</pre>
 * MariaDB (10.1.1+) runs a compound statement outside a stored program as one statement, and a
 * stored program may COMMIT (not a stored function or trigger); the SIGNAL ends the statement
 * before the COMMIT with error 1644, leaving the transaction open, to be rolled back by the caller.
 * After the COMMIT the server reports no transaction in the statement's OK packet, so Connector/J's
 * {@code Connection.commit()} (which sends COMMIT only while the server status says "in
 * transaction") then sends nothing; another driver's {@code commit()} would send a COMMIT outside a
 * transaction, which MariaDB accepts as a no-op. One text per shape of the key list, bound as
 * parameters: it works as a client-side prepared statement (Connector/J's default, which the tests
 * run) and was seen to work as a server-side one ({@code useServerPrepStmts=true}: MariaDB 10.11
 * prepares compound statements; checked by hand, not in the test suite). No
 * {@code allowMultiQueries} needed: it is one statement.
 *
 * <p>The keys are grouped by consumer group, each group one {@code consumer_group = ? AND
 * idempotency_key IN (…)}: a range read of the primary key per group. At most {@link
 * MariaDbBatchClaim#MAX_ROWS} keys per statement, so a statement is never larger than the batch
 * claim's INSERT of the same keys (which also sends the fingerprints); a longer list is counted
 * first in {@link MariaDbBatchClaim#MAX_ROWS}-key SELECTs, one round trip each, the last part with
 * the COMMIT.
 *
 * <p>Not detected, as before: a handler's SQL-text {@code COMMIT} (the markers are then committed
 * and still found), and a marker of the same key that another transaction committed after this
 * one was rolled back (the count then finds it: a race within one handler run).
 *
 * <p>Stateless apart from the table; thread-safe.
 */
final class MariaDbClaimCheck {
  /** The SQLSTATE and error number of the SIGNAL: a user-defined exception (1644 is MariaDB's for 45000). */
  static final String SIGNALLED_STATE = "45000";

  static final int SIGNALLED_ERROR = 1644;

  /** Part of the SIGNAL's message, which tells this check's refusal from any other 45000. */
  static final String LOST = "idem: the claiming transaction was rolled back";

  private final TableName table;

  MariaDbClaimCheck(TableName table) {
    this.table = table;
  }

  /** A key to check: its consumer group and value. */
  record Key(String consumerGroup, String key) {}

  /**
   * Counts the markers of {@code keys} in the transaction and, in the same round trip when they
   * are all there, COMMITs.
   *
   * @param keys distinct; at least one
   * @return whether every marker was found and the transaction committed; {@code false}: not
   *     committed, the transaction (a new one begun after the rollback) is still open
   * @throws SQLException when a statement failed otherwise (the COMMIT included)
   */
  boolean checkAndCommit(Connection connection, List<Key> keys) throws SQLException {
    int last = (keys.size() - 1) / MariaDbBatchClaim.MAX_ROWS * MariaDbBatchClaim.MAX_ROWS;
    if (last > 0 && !allHeld(connection, keys.subList(0, last))) {
      return false;
    }
    List<Key> tail = keys.subList(last, keys.size());
    StringBuilder sql = new StringBuilder("BEGIN NOT ATOMIC IF (");
    List<String> parameters = count(sql, tail);
    sql.append(") <> ").append(tail.size()).append(" THEN SIGNAL SQLSTATE '").append(SIGNALLED_STATE)
        .append("' SET MESSAGE_TEXT = '").append(LOST).append("'; END IF; COMMIT; END");
    try (PreparedStatement statement = connection.prepareStatement(sql.toString())) {
      bind(statement, parameters);
      statement.execute();
      return true;
    } catch (SQLException e) {
      if (isRefusal(e)) {
        return false;
      }
      throw e;
    }
  }

  /**
   * Whether every marker of {@code keys} is there, read in the transaction (one SELECT per {@link
   * MariaDbBatchClaim#MAX_ROWS} keys); for a transaction this store does not commit.
   *
   * @param keys distinct; may be empty
   */
  boolean allHeld(Connection connection, List<Key> keys) throws SQLException {
    for (int from = 0; from < keys.size(); from += MariaDbBatchClaim.MAX_ROWS) {
      List<Key> chunk = keys.subList(from, Math.min(keys.size(), from + MariaDbBatchClaim.MAX_ROWS));
      StringBuilder sql = new StringBuilder();
      List<String> parameters = count(sql, chunk);
      try (PreparedStatement statement = connection.prepareStatement(sql.toString())) {
        bind(statement, parameters);
        try (ResultSet row = statement.executeQuery()) {
          if (!row.next() || row.getLong(1) != chunk.size()) {
            return false;
          }
        }
      }
    }
    return true;
  }

  /** Whether {@code e} is this check's SIGNAL. */
  static boolean isRefusal(SQLException e) {
    return SIGNALLED_STATE.equals(e.getSQLState()) && e.getErrorCode() == SIGNALLED_ERROR
        && e.getMessage() != null && e.getMessage().contains(LOST);
  }

  /** Appends the count query of {@code keys} to {@code sql}; its parameters, in order. */
  private List<String> count(StringBuilder sql, List<Key> keys) {
    Map<String, List<String>> byGroup = new LinkedHashMap<>();
    for (Key key : keys) {
      byGroup.computeIfAbsent(key.consumerGroup(), g -> new ArrayList<>()).add(key.key());
    }
    List<String> parameters = new ArrayList<>(keys.size() + byGroup.size());
    sql.append("SELECT count(*) FROM ").append(table.qualified()).append(" WHERE ");
    boolean first = true;
    for (Map.Entry<String, List<String>> group : byGroup.entrySet()) {
      if (!first) {
        sql.append(" OR ");
      }
      first = false;
      sql.append("(consumer_group = ? AND idempotency_key IN (");
      parameters.add(group.getKey());
      for (int i = 0; i < group.getValue().size(); i++) {
        sql.append(i == 0 ? "?" : ", ?");
        parameters.add(group.getValue().get(i));
      }
      sql.append("))");
    }
    return parameters;
  }

  private static void bind(PreparedStatement statement, List<String> parameters) throws SQLException {
    for (int i = 0; i < parameters.size(); i++) {
      statement.setString(i + 1, parameters.get(i));
    }
  }
}
