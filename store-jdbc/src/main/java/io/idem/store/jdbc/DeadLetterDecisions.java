package io.idem.store.jdbc;

import io.idem.KeySource;
import io.idem.StoreUnavailableException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Objects;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * The dead-letter decisions of a processed-events table as an operator's tool sees them: read the
 * marker of a key, and release a key's decision before its dead letter is replayed
 * (docs/DEAD-LETTERS.md). {@link MyBatisProcessedEventStore#recordDeadLetter} writes a decision
 * as the key's marker with outcome {@code DEAD_LETTERED} (docs/STORE.md, "Dead-letter decisions");
 * {@link #release} deletes exactly such a marker, so that the replayed message is claimed anew
 * and its handler runs, while a {@code PROCESSED} marker — the key was applied meanwhile — is never
 * touched, so that a replay of it is a harmless duplicate.
 *
 * <p>Plain SQL on the table (one statement per call, auto-commit); on a table without the columns
 * of {@code V3__processed_events_dead_letters.sql} there are no decisions: every marker reads as
 * processed and nothing is released. On PostgreSQL and MariaDB ({@link Dialect}, read from each
 * connection's metadata: only the catalog queries differ). Thread-safe. The table name is
 * validated as an identifier.
 */
public final class DeadLetterDecisions {

  /** A key's marker: what its row says. */
  public enum Outcome {
    /** The key's message was applied. */
    PROCESSED,
    /** The key's message was dead-lettered, and the decision not released. */
    DEAD_LETTERED
  }

  /**
   * The marker of one key.
   *
   * @param outcome processed, or a dead-letter decision
   * @param keySource where the key came from when it was claimed or dead-lettered
   * @param brokerMessageId the dead-lettered delivery's broker id, for a decision; else {@code null}
   */
  public record Marker(Outcome outcome, KeySource keySource, @Nullable String brokerMessageId) {
    public Marker {
      Objects.requireNonNull(outcome, "outcome");
      Objects.requireNonNull(keySource, "keySource");
    }
  }

  private final DataSource dataSource;
  private final TableName table;
  private volatile @Nullable Boolean decisionColumns;

  private DeadLetterDecisions(DataSource dataSource, TableName table) {
    this.dataSource = dataSource;
    this.table = table;
  }

  /**
   * The decisions in {@code processedEventsTable} ({@code table} or {@code schema.table}, as given
   * to {@code MyBatisProcessedEventStore.Builder#tableName}).
   *
   * @throws IllegalArgumentException when the name is not a plain identifier
   */
  public static DeadLetterDecisions of(DataSource dataSource, String processedEventsTable) {
    return new DeadLetterDecisions(Objects.requireNonNull(dataSource, "dataSource"),
        TableName.of(Objects.requireNonNull(processedEventsTable, "processedEventsTable")));
  }

  /** The table, lower-cased as PostgreSQL stores it. */
  public String tableName() {
    return table.qualified();
  }

  /**
   * The marker of {@code key} in {@code consumerGroup}, or {@code null} when there is none (never
   * processed, released, or purged by retention).
   *
   * @throws StoreUnavailableException when the database cannot be reached
   * @throws IllegalStateException on any other database failure (a missing table, a privilege)
   */
  public @Nullable Marker marker(String consumerGroup, String key) {
    boolean decisions = hasDecisionColumns();
    String sql = "SELECT key_source" + (decisions ? ", outcome, broker_message_id" : "")
        + " FROM " + table.qualified() + " WHERE consumer_group = ? AND idempotency_key = ?";
    try (Connection c = dataSource.getConnection(); PreparedStatement s = c.prepareStatement(sql)) {
      s.setString(1, consumerGroup);
      s.setString(2, key);
      try (ResultSet rs = s.executeQuery()) {
        if (!rs.next()) {
          return null;
        }
        KeySource source = keySource(rs.getString(1));
        if (!decisions) {
          return new Marker(Outcome.PROCESSED, source, null);
        }
        boolean deadLettered = "DEAD_LETTERED".equals(rs.getString(2));
        return new Marker(deadLettered ? Outcome.DEAD_LETTERED : Outcome.PROCESSED, source,
            deadLettered ? rs.getString(3) : null);
      }
    } catch (SQLException | RuntimeException e) {
      throw DeadLetterActions.failure("reading the marker of key '" + key + "' in " + table.qualified(), e);
    }
  }

  /**
   * Deletes the dead-letter decision of {@code key} in {@code consumerGroup} — the row with outcome
   * {@code DEAD_LETTERED}, whichever delivery it was recorded for — in one statement of its own:
   * {@code DELETE … WHERE consumer_group = ? AND idempotency_key = ? AND outcome = 'DEAD_LETTERED'}.
   * A processed marker is never deleted. The key's attempt count, if the table has one ({@code
   * <table>_attempts}), is deleted too (and was when the decision was recorded), so the replayed
   * message starts with a fresh count.
   *
   * @return whether a decision was deleted ({@code false}: none was recorded, it was released
   *     already, or the key was processed)
   * @throws StoreUnavailableException when the database cannot be reached
   * @throws IllegalStateException on any other database failure
   */
  public boolean release(String consumerGroup, String key) {
    if (!hasDecisionColumns()) {
      return false;
    }
    String sql = "DELETE FROM " + table.qualified()
        + " WHERE consumer_group = ? AND idempotency_key = ? AND outcome = 'DEAD_LETTERED'";
    try (Connection c = dataSource.getConnection(); PreparedStatement s = c.prepareStatement(sql)) {
      if (!c.getAutoCommit()) {
        c.setAutoCommit(true);
      }
      s.setString(1, consumerGroup);
      s.setString(2, key);
      boolean released = s.executeUpdate() == 1;
      clearAttempts(c, consumerGroup, key);
      return released;
    } catch (SQLException | RuntimeException e) {
      throw DeadLetterActions.failure(
          "releasing the dead-letter decision of key '" + key + "' in " + table.qualified(), e);
    }
  }

  /**
   * Deletes the key's attempt count (V4__processed_events_attempts.sql) when the table has one, so
   * that the replayed message starts with a fresh count (docs/FAILURES.md).
   */
  private void clearAttempts(Connection c, String consumerGroup, String key) throws SQLException {
    TableName attempts = MyBatisProcessedEventStore.attemptsTable(table);
    if (attempts == null) {
      return;
    }
    boolean mariadb = Dialect.of(c.getMetaData()) == Dialect.MARIADB;
    try (PreparedStatement exists = c.prepareStatement(mariadb ? MARIADB_TABLE_EXISTS
        : "SELECT to_regclass(?) IS NOT NULL")) {
      bindTable(exists, 1, attempts, mariadb);
      try (ResultSet rs = exists.executeQuery()) {
        if (!rs.next() || !rs.getBoolean(1)) {
          return;
        }
      }
    }
    try (PreparedStatement s = c.prepareStatement("DELETE FROM " + attempts.qualified()
        + " WHERE consumer_group = ? AND idempotency_key = ?")) {
      s.setString(1, consumerGroup);
      s.setString(2, key);
      s.executeUpdate();
    }
  }

  /** MariaDB: whether the table (database from the name, else the current one) exists. */
  private static final String MARIADB_TABLE_EXISTS = "SELECT COUNT(*) > 0 FROM information_schema.TABLES"
      + " WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ?";

  /** MariaDB: whether the table has the {@code outcome} column, and whether it exists. */
  private static final String MARIADB_DECISION_COLUMNS = "SELECT (SELECT COUNT(*) FROM"
      + " information_schema.COLUMNS WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ?"
      + " AND COLUMN_NAME = 'outcome') > 0, (SELECT COUNT(*) FROM information_schema.TABLES"
      + " WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ?) > 0";

  /** Binds {@code table} for the catalog query: its qualified name, or (MariaDB) database and name. */
  private static void bindTable(PreparedStatement s, int first, TableName table, boolean mariadb)
      throws SQLException {
    if (!mariadb) {
      s.setString(first, table.qualified());
      return;
    }
    s.setString(first, (String) table.params().get("schema"));
    s.setString(first + 1, table.unqualified());
  }

  private static KeySource keySource(@Nullable String text) {
    try {
      return text == null ? KeySource.HEADER : KeySource.valueOf(text);
    } catch (IllegalArgumentException e) {
      return KeySource.HEADER;
    }
  }

  /** Whether the table has the {@code outcome} column; read once. */
  private boolean hasDecisionColumns() {
    Boolean known = decisionColumns;
    if (known != null) {
      return known;
    }
    String sql = "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute"
        + " WHERE attrelid = to_regclass(?) AND attname = 'outcome' AND NOT attisdropped),"
        + " to_regclass(?) IS NOT NULL";
    try (Connection c = dataSource.getConnection()) {
      boolean mariadb = Dialect.of(c.getMetaData()) == Dialect.MARIADB;
      try (PreparedStatement s = c.prepareStatement(mariadb ? MARIADB_DECISION_COLUMNS : sql)) {
        if (mariadb) {
          bindTable(s, 1, table, true);
          bindTable(s, 3, table, true);
        } else {
          s.setString(1, table.qualified());
          s.setString(2, table.qualified());
        }
        try (ResultSet rs = s.executeQuery()) {
          rs.next();
          if (!rs.getBoolean(2)) {
            throw new IllegalStateException("processed-events table " + table.qualified()
                + " does not exist (is the table name, or the JDBC URL's currentSchema, right?)");
          }
          boolean present = rs.getBoolean(1);
          decisionColumns = present;
          return present;
        }
      }
    } catch (SQLException | RuntimeException e) {
      throw DeadLetterActions.failure("checking table " + table.qualified(), e);
    }
  }
}
