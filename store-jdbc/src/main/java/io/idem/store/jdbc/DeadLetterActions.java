package io.idem.store.jdbc;

import io.idem.StoreUnavailableException;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * The record of what operators did with dead letters: one row per replay, rehearsal copy or
 * discard, with who and why, in a table of Idem's own ({@value #DEFAULT_TABLE}, created by
 * {@value #MIGRATION_RESOURCE}). The dead-letter tool ({@code idem-dead-letters}) writes a row
 * before it removes the dead letter, so nothing is removed without a record; a crash between the
 * two leaves a row for a dead letter that is still there (docs/DEAD-LETTERS.md).
 *
 * <p>Plain JDBC on the {@link DataSource} given, each call in a short transaction of its own
 * (auto-commit). Thread-safe. Build with {@link #builder(DataSource)}.
 */
public final class DeadLetterActions {

  /** Default {@link Builder#tableName(String) table}: {@value}. */
  public static final String DEFAULT_TABLE = "idem_dead_letter_actions";

  /** Classpath location of the table's script: {@value}. */
  public static final String MIGRATION_RESOURCE = "db/migration/idem/V7__dead_letter_actions.sql";

  /** MariaDB's script: {@value} (the same rows; docs/DEAD-LETTERS.md). */
  public static final String MARIADB_MIGRATION_RESOURCE = "db/migration/idem-mariadb/V7__dead_letter_actions.sql";

  private static final String DEFAULT_INDEX = "idem_dead_letter_actions_dead_letter_idx";

  /** What was done with a dead letter. */
  public enum Kind {
    /** Republished to its source (the publish confirmed by the broker), then removed. */
    REPLAYED,
    /** Republished to its source and kept in the dead-letter destination (a rehearsal). */
    COPIED,
    /** Removed without being republished. */
    DISCARDED
  }

  /**
   * One row.
   *
   * @param kind what was done
   * @param broker {@code kafka}, {@code rabbitmq}, {@code sqs} or {@code jms}
   * @param destination the dead-letter destination (topic, queue name or URL)
   * @param deadLetterId the dead letter's id there (a Kafka {@code topic-partition@offset}, an
   *     SQS or JMS message id, a RabbitMQ {@code message-id})
   * @param consumerGroup the consumer group of the Idem reason, or {@code null}
   * @param key the idempotency key of the Idem reason, or {@code null}
   * @param cause the dead-letter cause, or {@code null}
   * @param target where a replay was published, {@code null} for a discard
   * @param operator who did it
   * @param reason why, or {@code null}
   * @param actedAt when (the database's clock), {@code null} before it is recorded
   */
  public record Action(
      Kind kind,
      String broker,
      String destination,
      String deadLetterId,
      @Nullable String consumerGroup,
      @Nullable String key,
      @Nullable String cause,
      @Nullable String target,
      String operator,
      @Nullable String reason,
      @Nullable Instant actedAt) {

    public Action {
      Objects.requireNonNull(kind, "kind");
      Objects.requireNonNull(broker, "broker");
      Objects.requireNonNull(destination, "destination");
      Objects.requireNonNull(deadLetterId, "deadLetterId");
      Objects.requireNonNull(operator, "operator");
    }
  }

  private final DataSource dataSource;
  private final TableName table;
  /** The database, read from a connection's metadata at {@link Builder#build()}. */
  private final Dialect dialect;

  private DeadLetterActions(Builder b, Dialect dialect) {
    this.dataSource = b.dataSource;
    this.table = TableName.of(b.tableName);
    this.dialect = dialect;
  }

  /** Starts building the record on {@code dataSource}. */
  public static Builder builder(DataSource dataSource) {
    return new Builder(dataSource);
  }

  /** The table, lower-cased as PostgreSQL stores it. */
  public String tableName() {
    return table.qualified();
  }

  /**
   * Writes {@code action} (its {@code actedAt} is ignored: the database's {@code now()}).
   *
   * @throws StoreUnavailableException when the database cannot be reached
   * @throws IllegalStateException on any other database failure (a missing table, a privilege)
   */
  public void record(Action action) {
    String sql = "INSERT INTO " + table.qualified() + " (action, broker, destination, dead_letter_id,"
        + " consumer_group, idempotency_key, cause, target, operator, reason)"
        + " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    try (Connection c = dataSource.getConnection(); PreparedStatement s = c.prepareStatement(sql)) {
      ensureAutoCommit(c);
      s.setString(1, action.kind().name());
      s.setString(2, action.broker());
      s.setString(3, action.destination());
      s.setString(4, action.deadLetterId());
      s.setString(5, action.consumerGroup());
      s.setString(6, action.key());
      s.setString(7, action.cause());
      s.setString(8, action.target());
      s.setString(9, action.operator());
      s.setString(10, action.reason());
      s.executeUpdate();
    } catch (SQLException | RuntimeException e) {
      throw failure("recording a dead-letter action in " + table.qualified(), e);
    }
  }

  /**
   * Which of {@code deadLetterIds} of {@code destination} were {@link Kind#REPLAYED replayed} or
   * {@link Kind#DISCARDED discarded} (a {@link Kind#COPIED copy} leaves the dead letter in
   * place): one indexed read.
   *
   * @throws StoreUnavailableException when the database cannot be reached
   * @throws IllegalStateException on any other database failure
   */
  public Set<String> settled(String destination, Collection<String> deadLetterIds) {
    Set<String> found = new HashSet<>();
    if (deadLetterIds.isEmpty()) {
      return found;
    }
    boolean mariadb = dialect == Dialect.MARIADB; // no arrays: one parameter per id
    String sql = "SELECT DISTINCT dead_letter_id FROM " + table.qualified() + " WHERE destination = ? AND "
        + (mariadb ? "dead_letter_id IN (" + String.join(", ", Collections.nCopies(deadLetterIds.size(), "?")) + ")"
            : "dead_letter_id = ANY (?)")
        + " AND action IN ('REPLAYED', 'DISCARDED')";
    try (Connection c = dataSource.getConnection(); PreparedStatement s = c.prepareStatement(sql)) {
      s.setString(1, destination);
      if (mariadb) {
        int i = 2;
        for (String id : deadLetterIds) {
          s.setString(i++, id);
        }
      } else {
        Array ids = c.createArrayOf("text", deadLetterIds.toArray());
        s.setArray(2, ids);
      }
      try (ResultSet rs = s.executeQuery()) {
        while (rs.next()) {
          found.add(rs.getString(1));
        }
      }
      return found;
    } catch (SQLException | RuntimeException e) {
      throw failure("reading dead-letter actions from " + table.qualified(), e);
    }
  }

  /**
   * The rows of {@code destination}, newest first, at most {@code limit}; of one dead letter only
   * when {@code deadLetterId} is not {@code null}.
   *
   * @throws StoreUnavailableException when the database cannot be reached
   * @throws IllegalStateException on any other database failure
   */
  public List<Action> history(String destination, @Nullable String deadLetterId, int limit) {
    if (limit < 1) {
      throw new IllegalArgumentException("limit must be >= 1, but was " + limit);
    }
    String sql = "SELECT action, broker, destination, dead_letter_id, consumer_group, idempotency_key,"
        + " cause, target, operator, reason, acted_at FROM " + table.qualified()
        + " WHERE destination = ?" + (deadLetterId != null ? " AND dead_letter_id = ?" : "")
        + " ORDER BY id DESC LIMIT ?";
    try (Connection c = dataSource.getConnection(); PreparedStatement s = c.prepareStatement(sql)) {
      int i = 1;
      s.setString(i++, destination);
      if (deadLetterId != null) {
        s.setString(i++, deadLetterId);
      }
      s.setInt(i, limit);
      List<Action> rows = new ArrayList<>();
      try (ResultSet rs = s.executeQuery()) {
        while (rs.next()) {
          rows.add(new Action(Kind.valueOf(rs.getString(1)), rs.getString(2), rs.getString(3),
              rs.getString(4), rs.getString(5), rs.getString(6), rs.getString(7), rs.getString(8),
              rs.getString(9), rs.getString(10), actedAt(rs)));
        }
      }
      return rows;
    } catch (SQLException | RuntimeException e) {
      throw failure("reading dead-letter actions from " + table.qualified(), e);
    }
  }

  /** acted_at: PostgreSQL's timestamptz, MariaDB's UTC DATETIME(6) (a wall-clock time in UTC). */
  private @Nullable Instant actedAt(ResultSet rs) throws SQLException {
    if (dialect == Dialect.MARIADB) {
      LocalDateTime utc = rs.getObject(11, LocalDateTime.class);
      return utc == null ? null : utc.toInstant(ZoneOffset.UTC);
    }
    Timestamp at = rs.getTimestamp(11);
    return at == null ? null : at.toInstant();
  }

  /**
   * Checks that the table exists.
   *
   * @throws IllegalStateException naming the script to run when it does not
   * @throws StoreUnavailableException when the database cannot be reached
   */
  public void verifyTable() {
    boolean mariadb = dialect == Dialect.MARIADB;
    String schema = table.qualified().equals(table.unqualified()) ? null
        : table.qualified().substring(0, table.qualified().length() - table.unqualified().length() - 1);
    try (Connection c = dataSource.getConnection();
        PreparedStatement s = c.prepareStatement(mariadb
            ? "SELECT count(*) > 0 FROM information_schema.tables WHERE table_schema = coalesce(?, DATABASE())"
                + " AND table_name = ?"
            : "SELECT to_regclass(?) IS NOT NULL")) {
      if (mariadb) {
        s.setString(1, schema);
        s.setString(2, table.unqualified());
      } else {
        s.setString(1, table.qualified());
      }
      try (ResultSet rs = s.executeQuery()) {
        if (!rs.next() || !rs.getBoolean(1)) {
          throw new IllegalStateException("table " + table.qualified() + " does not exist: run "
              + (mariadb ? MARIADB_MIGRATION_RESOURCE : MIGRATION_RESOURCE) + " (in idem-store-jdbc) with your"
              + " migration tool, or create it with createTableIfMissing(true)");
        }
      }
    } catch (SQLException e) {
      throw failure("checking table " + table.qualified(), e);
    }
  }

  /** The script with the table (and index) renamed for {@code table}. */
  static String script(TableName table) {
    return script(table, Dialect.POSTGRESQL);
  }

  /** {@link #script(TableName)} of {@code dialect}. */
  static String script(TableName table, Dialect dialect) {
    String sql = ProcessedEventsMapper.readResource(
        dialect == Dialect.MARIADB ? MARIADB_MIGRATION_RESOURCE : MIGRATION_RESOURCE);
    sql = Pattern.compile("\\b" + DEFAULT_TABLE + "\\b(?!_)").matcher(sql)
        .replaceAll(Matcher.quoteReplacement(table.qualified()));
    return sql.replace(DEFAULT_INDEX, table.unqualified() + "_dead_letter_idx");
  }

  private void createTable() {
    try (Connection c = dataSource.getConnection()) {
      if (dialect == Dialect.MARIADB) {
        ProcessedEventsSchema.runMariaDbScript(c, script(table, dialect));
      } else {
        ProcessedEventsSchema.runScript(c, script(table));
      }
    } catch (SQLException | RuntimeException e) {
      throw failure("creating " + table.qualified(), e);
    }
  }

  private static void ensureAutoCommit(Connection c) throws SQLException {
    if (!c.getAutoCommit()) {
      c.setAutoCommit(true);
    }
  }

  static RuntimeException failure(String what, Exception e) {
    if (e instanceof StoreUnavailableException || e instanceof IllegalStateException) {
      return (RuntimeException) e;
    }
    String message = what + " failed: " + TransientFailures.rootMessage(e);
    if (TransientFailures.isTransient(e)) {
      return new StoreUnavailableException(message, e);
    }
    return new IllegalStateException(message, e);
  }

  /** Builder of {@link DeadLetterActions}. Not thread-safe. */
  public static final class Builder {
    private final DataSource dataSource;
    private String tableName = DEFAULT_TABLE;
    private boolean createTableIfMissing;

    private Builder(DataSource dataSource) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    }

    /** The table, {@code table} or {@code schema.table}; default {@value #DEFAULT_TABLE}. */
    public Builder tableName(String value) {
      this.tableName = Objects.requireNonNull(value, "tableName").toLowerCase(Locale.ROOT);
      return this;
    }

    /** Whether {@link #build()} creates the table when it is missing; default {@code false}. */
    public Builder createTableIfMissing(boolean value) {
      this.createTableIfMissing = value;
      return this;
    }

    /**
     * @throws IllegalArgumentException when the table name is not a plain identifier
     * @throws IllegalStateException when the table is missing (and not created) or cannot be made
     * @throws StoreUnavailableException when the database cannot be reached
     */
    public DeadLetterActions build() {
      Dialect dialect;
      try (Connection c = dataSource.getConnection()) {
        dialect = Dialect.of(c.getMetaData());
      } catch (SQLException | RuntimeException e) {
        throw failure("reading the database of " + tableName, e);
      }
      DeadLetterActions actions = new DeadLetterActions(this, dialect);
      if (createTableIfMissing) {
        actions.createTable();
      }
      actions.verifyTable();
      return actions;
    }
  }
}
