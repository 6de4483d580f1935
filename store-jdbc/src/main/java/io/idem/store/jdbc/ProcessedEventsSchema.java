package io.idem.store.jdbc;

import io.idem.StoreUnavailableException;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;

/**
 * Applies {@link MyBatisProcessedEventStore#MIGRATION_RESOURCE}, then {@link
 * MyBatisProcessedEventStore#DEAD_LETTERS_MIGRATION_RESOURCE}, for applications without a
 * migration tool and for tests. Idempotent ({@code IF NOT EXISTS}), and serialised across
 * processes by a transaction-scoped advisory lock so that instances starting together do not
 * race on the catalog.
 */
public final class ProcessedEventsSchema {
  private static final String DEFAULT_INDEX = "idem_processed_events_processed_at_idx";

  private ProcessedEventsSchema() {}

  /**
   * Creates the processed-events table {@code tableName} (and its index) when missing, and adds the
   * dead-letter decision columns when missing (to a table of an earlier version too).
   *
   * @param tableName {@code table} or {@code schema.table}, validated as identifiers
   * @throws IllegalArgumentException when the name is not a plain identifier
   * @throws StoreUnavailableException when the database could not be reached or asked for a retry
   *     (SQLSTATE classes 08, 53, 57P, 40001, 40P01: see {@code TransientFailures})
   * @throws IllegalStateException when the script failed for any other reason, a configuration
   *     error such as a missing schema (3F000) or privilege (42501)
   */
  public static void apply(DataSource dataSource, String tableName) {
    TableName table = TableName.of(tableName);
    try (Connection c = dataSource.getConnection()) {
      run(c, table, Dialect.of(c.getMetaData()));
    } catch (SQLException | RuntimeException e) {
      throw failure(table, e);
    }
  }

  static void apply(SqlSessionFactory sessions, TableName table) {
    apply(sessions, table, Dialect.POSTGRESQL);
  }

  /** Applies {@code dialect}'s scripts ({@link Dialect#migrations()}) for {@code table}. */
  static void apply(SqlSessionFactory sessions, TableName table, Dialect dialect) {
    try (SqlSession session = sessions.openSession(false)) {
      run(session.getConnection(), table, dialect);
    } catch (SQLException | RuntimeException e) {
      throw failure(table, e);
    }
  }

  private static RuntimeException failure(TableName table, Exception e) {
    if (e instanceof IllegalStateException refused && e.getCause() == null) {
      return refused; // an unsupported database, named
    }
    SQLException tooLong = Dialect.find(e, x -> x.getErrorCode() == ER_TOO_LONG_KEY);
    if (tooLong != null) {
      return new IllegalStateException("could not create " + table.qualified() + ": its key"
          + " (consumer_group varchar(128), idempotency_key varchar(512), utf8mb4) needs up to 2560"
          + " bytes, more than this server's InnoDB index allows (" + tooLong.getMessage() + ";"
          + " innodb_page_size 16k with ROW_FORMAT=DYNAMIC allows 3072); keys are never shortened", e);
    }
    return StartupChecks.failure("could not create " + table.qualified(), e);
  }

  /** MariaDB's "Specified key was too long; max key length is N bytes". */
  private static final int ER_TOO_LONG_KEY = 1071;

  /**
   * The script with the table (and index) renamed for {@code table}. The table is renamed first,
   * as a whole word only (the index name merely starts with it), then the index: renaming in the
   * other order turned {@code billing.idem_processed_events} into a schema-qualified index name,
   * which PostgreSQL rejects.
   */
  static String script(TableName table) {
    return script(table, Dialect.POSTGRESQL);
  }

  /** {@link #script(TableName)} from {@code dialect}'s folder ({@link Dialect#migrations()}). */
  static String script(TableName table, Dialect dialect) {
    String folder = dialect.migrations() + "/";
    String sql = ProcessedEventsMapper.readResource(folder + FILE_V1)
        + ";\n" + ProcessedEventsMapper.readResource(folder + FILE_V3);
    TableName attempts = MyBatisProcessedEventStore.attemptsTable(table);
    if (attempts != null) {
      // the attempts table first, by its full name: the rule below leaves names going on with "_"
      sql += ";\n" + ProcessedEventsMapper.readResource(folder + FILE_V4).replace(
              MyBatisProcessedEventStore.DEFAULT_TABLE + MyBatisProcessedEventStore.ATTEMPTS_SUFFIX,
              attempts.qualified());
    }
    sql = Pattern.compile("\\b" + MyBatisProcessedEventStore.DEFAULT_TABLE + "\\b(?!_)").matcher(sql)
        .replaceAll(Matcher.quoteReplacement(table.qualified()));
    return sql.replace(DEFAULT_INDEX, table.unqualified() + "_processed_at_idx");
  }

  private static final String FILE_V1 = "V1__processed_events.sql";
  private static final String FILE_V3 = "V3__processed_events_dead_letters.sql";
  private static final String FILE_V4 = "V4__processed_events_attempts.sql";

  private static void run(Connection c, TableName table, Dialect dialect) throws SQLException {
    if (dialect == Dialect.MARIADB) {
      runMariaDbScript(c, script(table, dialect));
    } else {
      runScript(c, script(table));
    }
  }

  /** Seconds a MariaDB start-up waits for another instance applying the scripts: {@value}. */
  static final int SCHEMA_LOCK_WAIT_SECONDS = 60;

  /**
   * MariaDB: each DDL statement commits on its own, so there is no transaction to run the script
   * in; instances starting together are serialised by the named lock {@code idem_schema} ({@code
   * GET_LOCK}, held by the connection, released at the end), and every statement is idempotent
   * ({@code IF NOT EXISTS}).
   */
  static void runMariaDbScript(Connection c, String script) throws SQLException {
    boolean autoCommit = c.getAutoCommit();
    c.setAutoCommit(true);
    try (Statement s = c.createStatement()) {
      try (ResultSet locked = s.executeQuery("SELECT GET_LOCK('idem_schema', " + SCHEMA_LOCK_WAIT_SECONDS + ")")) {
        if (!locked.next() || locked.getInt(1) != 1) {
          throw new SQLException("another instance held the lock idem_schema for more than "
              + SCHEMA_LOCK_WAIT_SECONDS + " s while applying the schema", "HY000");
        }
      }
      try {
        for (String sql : script.split(";")) {
          String statement = stripComments(sql);
          if (!statement.isBlank()) {
            s.execute(statement);
          }
        }
      } finally {
        s.execute("DO RELEASE_LOCK('idem_schema')");
      }
    } finally {
      c.setAutoCommit(autoCommit);
    }
  }

  /**
   * Runs the statements of {@code script} ({@code ;}-separated, {@code --} comment lines) in one
   * transaction under the schema advisory lock (the outbox's script runs this way too).
   */
  static void runScript(Connection c, String script) throws SQLException {
    boolean autoCommit = c.getAutoCommit();
    c.setAutoCommit(false);
    try (Statement s = c.createStatement()) {
      s.execute("SELECT pg_advisory_xact_lock(7358201946)"); // "idem schema", any fixed number
      for (String sql : script.split(";")) {
        String statement = stripComments(sql);
        if (!statement.isBlank()) {
          s.execute(statement);
        }
      }
      c.commit();
    } catch (SQLException e) {
      c.rollback();
      throw e;
    } finally {
      c.setAutoCommit(autoCommit);
    }
  }

  private static String stripComments(String sql) {
    StringBuilder out = new StringBuilder();
    for (String line : sql.split("\n")) {
      if (!line.strip().startsWith("--")) {
        out.append(line).append('\n');
      }
    }
    return out.toString();
  }
}
