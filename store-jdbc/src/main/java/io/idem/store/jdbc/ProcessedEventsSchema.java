package io.idem.store.jdbc;

import io.idem.StoreUnavailableException;
import java.sql.Connection;
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
      run(c, table);
    } catch (SQLException | RuntimeException e) {
      throw failure(table, e);
    }
  }

  static void apply(SqlSessionFactory sessions, TableName table) {
    try (SqlSession session = sessions.openSession(false)) {
      run(session.getConnection(), table);
    } catch (SQLException | RuntimeException e) {
      throw failure(table, e);
    }
  }

  private static RuntimeException failure(TableName table, Exception e) {
    return StartupChecks.failure("could not create " + table.qualified(), e);
  }

  /**
   * The script with the table (and index) renamed for {@code table}. The table is renamed first,
   * as a whole word only (the index name merely starts with it), then the index: renaming in the
   * other order turned {@code billing.idem_processed_events} into a schema-qualified index name,
   * which PostgreSQL rejects.
   */
  static String script(TableName table) {
    String sql = ProcessedEventsMapper.readResource(MyBatisProcessedEventStore.MIGRATION_RESOURCE)
        + ";\n" + ProcessedEventsMapper.readResource(
            MyBatisProcessedEventStore.DEAD_LETTERS_MIGRATION_RESOURCE);
    TableName attempts = MyBatisProcessedEventStore.attemptsTable(table);
    if (attempts != null) {
      // the attempts table first, by its full name: the rule below leaves names going on with "_"
      sql += ";\n" + ProcessedEventsMapper.readResource(
          MyBatisProcessedEventStore.ATTEMPTS_MIGRATION_RESOURCE).replace(
              MyBatisProcessedEventStore.DEFAULT_TABLE + MyBatisProcessedEventStore.ATTEMPTS_SUFFIX,
              attempts.qualified());
    }
    sql = Pattern.compile("\\b" + MyBatisProcessedEventStore.DEFAULT_TABLE + "\\b(?!_)").matcher(sql)
        .replaceAll(Matcher.quoteReplacement(table.qualified()));
    return sql.replace(DEFAULT_INDEX, table.unqualified() + "_processed_at_idx");
  }

  private static void run(Connection c, TableName table) throws SQLException {
    runScript(c, script(table));
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
