package io.idem.demo;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.fixtures.MariaDbFixture;
import io.idem.fixtures.PostgresFixture;
import io.idem.store.jdbc.Outbox;
import io.idem.store.jdbc.ProcessedEventsSchema;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSessionFactory;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;
import org.jspecify.annotations.Nullable;

/**
 * The demo's database — a PostgreSQL schema, or a MariaDB database with {@code --database
 * mariadb} ({@link #kind()}): Idem's processed-events table, the business table
 * {@code demo_payments} (deliberately without a unique constraint, so a doubled effect shows up as
 * a second row) and the list of published order ids, for the ledger; for the receipts, Idem's
 * outbox table {@value Outbox#DEFAULT_TABLE} and the downstream consumer's table
 * {@code demo_receipts} (no unique constraint either). The same Idem code runs on both: the store
 * and the outbox read the database from the connection.
 */
final class DemoDatabase implements AutoCloseable {
  /** The system property naming the demo's database, {@value}: postgresql (default) or mariadb. */
  static final String DATABASE_PROPERTY = "idem.demo.database";
  /** The databases the demo runs on. */
  static final List<String> KINDS = List.of("postgresql", "mariadb");

  final String schema;
  final HikariDataSource dataSource;

  private DemoDatabase(String schema, HikariDataSource dataSource) {
    this.schema = schema;
    this.dataSource = dataSource;
  }

  /** {@value #DATABASE_PROPERTY}: {@code postgresql} or {@code mariadb}. */
  static String kind() {
    return System.getProperty(DATABASE_PROPERTY, "postgresql").toLowerCase(Locale.ROOT);
  }

  static boolean mariadb() {
    return kind().equals("mariadb");
  }

  /**
   * {@code value} in lower case, one of {@link #KINDS}.
   *
   * @throws IllegalArgumentException naming the value when it is neither
   */
  static String kindOf(String value) {
    String kind = Objects.requireNonNull(value, "database").toLowerCase(Locale.ROOT);
    if (!KINDS.contains(kind)) {
      throw new IllegalArgumentException("database must be one of " + KINDS + ", but was '" + value + "'");
    }
    return kind;
  }

  /** Work that reads {@link #kind()}: a run, with the child JVMs it starts. */
  @FunctionalInterface
  interface OnDatabase<T, E extends Exception> {
    T run() throws E;
  }

  /**
   * Runs {@code work} with {@value #DATABASE_PROPERTY} set to {@code kind} ({@code null}: left as
   * it is), and restores the property after, so that one run's database never leaks into the next
   * run in the same JVM (a test's). Not for runs in parallel: the property is the JVM's.
   */
  static <T, E extends Exception> T on(@Nullable String kind, OnDatabase<T, E> work) throws E {
    String previous = System.getProperty(DATABASE_PROPERTY);
    if (kind != null) {
      System.setProperty(DATABASE_PROPERTY, kind);
    }
    try {
      return work.run();
    } finally {
      if (previous == null) {
        System.clearProperty(DATABASE_PROPERTY);
      } else {
        System.setProperty(DATABASE_PROPERTY, previous);
      }
    }
  }

  /** The database, as the ledger's first line says it: {@code MariaDB database x on …}. */
  static String describe(String schema) {
    return mariadb() ? "MariaDB database " + schema + " on " + MariaDbFixture.shared().origin()
        : "PostgreSQL schema " + schema + " on " + PostgresFixture.shared().origin();
  }

  /** The JVM arguments a child process (consumer, relay) needs to use the same database. */
  static List<String> childJvmArgs() {
    return List.of("-D" + DATABASE_PROPERTY + "=" + kind());
  }

  /** The environment a child process needs to find the same server. */
  static Map<String, String> childEnvironment() {
    if (mariadb()) {
      MariaDbFixture m = MariaDbFixture.shared();
      return Map.of("IDEM_MARIADB_URL", m.jdbcUrl(), "IDEM_MARIADB_USER", m.user(), "IDEM_MARIADB_PASSWORD", m.password());
    }
    PostgresFixture pg = PostgresFixture.shared();
    return Map.of("IDEM_POSTGRES_URL", pg.jdbcUrl(), "IDEM_POSTGRES_USER", pg.user(),
        "IDEM_POSTGRES_PASSWORD", pg.password());
  }

  /** Creates a fresh schema (MariaDB: database) with the demo's tables. */
  static DemoDatabase create(String schema) {
    HikariDataSource ds;
    boolean mariadb = mariadb();
    if (mariadb) {
      MariaDbFixture.shared().createDatabase(schema);
      ds = MariaDbFixture.shared().dataSource(schema, 4);
    } else {
      PostgresFixture.shared().createSchema(schema);
      ds = PostgresFixture.shared().dataSource(schema, 4);
    }
    // MariaDB: order ids compared exactly (utf8mb4_nopad_bin), times in UTC
    String id = mariadb ? "id bigint AUTO_INCREMENT PRIMARY KEY" : "id bigserial PRIMARY KEY";
    String text = mariadb ? "varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin" : "text";
    String now = mariadb ? "datetime(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6))" : "timestamptz NOT NULL DEFAULT clock_timestamp()";
    try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
      for (String table : List.of("demo_payments", "demo_receipts")) {
        s.execute("CREATE TABLE IF NOT EXISTS " + table + " (" + id + ", order_id " + text + " NOT NULL,"
            + " amount_cents bigint NOT NULL, applied_at " + now + ")");
        s.execute("CREATE INDEX IF NOT EXISTS " + table + "_order_idx ON " + table + " (order_id)");
      }
      s.execute("CREATE TABLE IF NOT EXISTS demo_published (order_id " + text + " PRIMARY KEY)");
    } catch (SQLException e) {
      ds.close();
      throw new IllegalStateException("could not create the demo tables in " + schema + ": " + e.getMessage(), e);
    }
    ProcessedEventsSchema.apply(ds, "idem_processed_events");
    Outbox.createTableIfMissing(ds, Outbox.DEFAULT_TABLE);
    return new DemoDatabase(schema, ds);
  }

  /** A connection pool on an existing demo schema (the consumer process's). */
  static DemoDatabase open(String schema, int poolSize) {
    return new DemoDatabase(schema, mariadb() ? MariaDbFixture.shared().dataSource(schema, poolSize)
        : PostgresFixture.shared().dataSource(schema, poolSize));
  }

  /** The application's MyBatis setup: a session factory with the demo's mapper. */
  SqlSessionFactory sessions() {
    Configuration configuration =
        new Configuration(new Environment("demo", new JdbcTransactionFactory(), dataSource));
    configuration.addMapper(PaymentMapper.class);
    configuration.addMapper(ReceiptMapper.class);
    return new SqlSessionFactoryBuilder().build(configuration);
  }

  void recordPublished(Collection<String> orderIds) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(mariadb()
            ? "INSERT INTO demo_published (order_id) VALUES (?) ON DUPLICATE KEY UPDATE order_id = order_id"
            : "INSERT INTO demo_published (order_id) VALUES (?) ON CONFLICT DO NOTHING")) {
      c.setAutoCommit(false);
      for (String id : orderIds) {
        ps.setString(1, id);
        ps.addBatch();
      }
      ps.executeBatch();
      c.commit();
    } catch (SQLException e) {
      throw new IllegalStateException("could not record published ids: " + e.getMessage(), e);
    }
  }

  /** Effect rows (business writes) so far. */
  long effects() {
    return count("SELECT count(*) FROM demo_payments");
  }

  /** Rows of consumer group {@code group} in the processed-events table: one per key whose effect committed. */
  long markers(String group) {
    return count("SELECT count(*) FROM idem_processed_events WHERE consumer_group = ?", group);
  }

  /** Distinct orders with at least one effect. */
  long ordersApplied() {
    return count("SELECT count(DISTINCT order_id) FROM demo_payments");
  }

  /** Extra effect rows beyond one per order: 0 when nothing was applied twice. */
  long doubled() {
    return count("SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) n FROM demo_payments"
        + " GROUP BY order_id HAVING count(*) > 1) d");
  }

  /** Published orders without any effect. */
  long missing() {
    return count("SELECT count(*) FROM demo_published p WHERE NOT EXISTS"
        + " (SELECT 1 FROM demo_payments e WHERE e.order_id = p.order_id)");
  }

  /** Effect rows whose order was never published (must be 0). */
  long unexpected() {
    return count("SELECT count(*) FROM demo_payments e WHERE NOT EXISTS"
        + " (SELECT 1 FROM demo_published p WHERE p.order_id = e.order_id)");
  }

  /** Receipt rows the handlers wrote to the outbox for {@code destination}: one per order applied. */
  long receiptsEnqueued(String destination) {
    return count("SELECT count(*) FROM " + Outbox.DEFAULT_TABLE + " WHERE destination = ?", destination);
  }

  /** Of those, the rows a relay marked sent (each was confirmed by the broker at least once). */
  long receiptsPublished(String destination) {
    return count("SELECT count(*) FROM " + Outbox.DEFAULT_TABLE + " WHERE destination = ? AND sent_at IS NOT NULL",
        destination);
  }

  /** How many of the outbox rows {@code ids} are still unsent (neither sent nor parked). */
  long unsent(Collection<Long> ids) {
    if (ids.isEmpty()) {
      return 0;
    }
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM " + Outbox.DEFAULT_TABLE
            + " WHERE id " + (mariadb() ? "IN (" + String.join(", ", Collections.nCopies(ids.size(), "?")) + ")" : "= ANY (?)")
            + " AND sent_at IS NULL AND parked_at IS NULL")) {
      if (mariadb()) {
        int i = 1;
        for (Long each : ids) {
          ps.setLong(i++, each);
        }
      } else {
        ps.setArray(1, c.createArrayOf("bigint", ids.toArray()));
      }
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    } catch (SQLException e) {
      throw new IllegalStateException("ledger query failed: " + e.getMessage(), e);
    }
  }

  /** Rows the downstream consumer wrote to the receipts table. */
  long receiptsApplied() {
    return count("SELECT count(*) FROM demo_receipts");
  }

  /** Distinct orders with at least one receipt row. */
  long ordersReceipted() {
    return count("SELECT count(DISTINCT order_id) FROM demo_receipts");
  }

  /** Receipt rows beyond one per order: 0 when no receipt was applied twice. */
  long receiptsDoubled() {
    return count("SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) n FROM demo_receipts"
        + " GROUP BY order_id HAVING count(*) > 1) d");
  }

  /** Published orders without a receipt row, plus receipt rows of orders never published. */
  long receiptsMissing() {
    return count("SELECT count(*) FROM demo_published p WHERE NOT EXISTS"
        + " (SELECT 1 FROM demo_receipts r WHERE r.order_id = p.order_id)")
        + count("SELECT count(*) FROM demo_receipts r WHERE NOT EXISTS"
        + " (SELECT 1 FROM demo_published p WHERE p.order_id = r.order_id)");
  }

  private long count(String sql, Object... params) {
    try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
      for (int i = 0; i < params.length; i++) {
        ps.setObject(i + 1, params[i]);
      }
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    } catch (SQLException e) {
      throw new IllegalStateException("ledger query failed: " + e.getMessage(), e);
    }
  }

  void dropSchema() {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute(mariadb() ? "DROP DATABASE IF EXISTS `" + schema + "`" : "DROP SCHEMA IF EXISTS " + schema + " CASCADE");
    } catch (SQLException e) {
      System.err.println("could not drop " + schema + ": " + e.getMessage());
    }
  }

  @Override
  public void close() {
    dataSource.close();
  }
}
