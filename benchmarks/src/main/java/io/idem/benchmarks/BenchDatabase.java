package io.idem.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.idem.store.jdbc.ProcessedEventsSchema;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Collection;
import java.util.List;
import java.util.Properties;

/**
 * One run's tables, in a schema of its own on the benchmark's PostgreSQL — or, for a {@code
 * jdbc:mariadb:} URL, a database of its own on MariaDB (the pool's catalog): {@code effects}
 * (the business write, deliberately WITHOUT a unique constraint, so an effect applied twice is a
 * second row), {@code expected_ids} (the distinct order ids published, for the ledger) and Idem's
 * {@code idem_processed_events} (store-jdbc's script of that database). {@link #close()} drops the
 * schema (the database).
 */
final class BenchDatabase implements AutoCloseable {
  /** The business table's name. */
  static final String EFFECTS = "effects";
  static final String MARKERS = "idem_processed_events";

  final String jdbcUrl;
  final String user;
  final String password;
  final String schema;
  final HikariDataSource dataSource;
  /** Whether the database is MariaDB ({@code jdbc:mariadb:} URL) rather than PostgreSQL. */
  final boolean mariaDb;

  private BenchDatabase(String jdbcUrl, String user, String password, String schema, HikariDataSource dataSource) {
    this.jdbcUrl = jdbcUrl;
    this.user = user;
    this.password = password;
    this.schema = schema;
    this.dataSource = dataSource;
    this.mariaDb = isMariaDb(jdbcUrl);
  }

  /**
   * Whether the pools hand out connections in auto-commit mode (HikariCP's default, as the README's
   * quick starts); {@code SideBySide --pool-auto-commit false} turns it off, and the Idem pipelines
   * then skip MyBatis' auto-commit reset at close ({@link #transactionFactory}). Set before the
   * runs start.
   */
  static volatile boolean poolAutoCommit = true;

  /**
   * MyBatis' JDBC transactions for a pipeline on this database's pool: with {@link
   * #poolAutoCommit} off, {@code skipSetAutoCommitOnClose}, so that neither MyBatis (auto-commit
   * on at close) nor the pool (back off when returned) changes the mode: on MariaDB each change is
   * a {@code set autocommit} round trip.
   */
  static org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory transactionFactory() {
    org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory factory = new org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory();
    if (!poolAutoCommit) {
      Properties settings = new Properties();
      settings.setProperty("skipSetAutoCommitOnClose", "true");
      factory.setProperties(settings);
    }
    return factory;
  }

  static boolean isMariaDb(String jdbcUrl) {
    return jdbcUrl.startsWith("jdbc:mariadb:");
  }

  /** Creates schema {@code schema} (dropped first if left over) with the run's tables. */
  static BenchDatabase create(String jdbcUrl, String user, String password, String schema, int poolSize) {
    try (Connection c = DriverManager.getConnection(jdbcUrl, props(user, password));
        Statement s = c.createStatement()) {
      if (isMariaDb(jdbcUrl)) {
        s.execute("DROP DATABASE IF EXISTS " + schema);
        s.execute("CREATE DATABASE " + schema + " CHARACTER SET utf8mb4");
        s.execute("CREATE TABLE " + schema + "." + EFFECTS
            + " (order_id varchar(64) NOT NULL, applied_at datetime(6) NOT NULL DEFAULT now(6))");
        s.execute("CREATE TABLE " + schema + ".expected_ids (order_id varchar(64) PRIMARY KEY)");
      } else {
        s.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
        s.execute("CREATE SCHEMA " + schema);
        s.execute("CREATE TABLE " + schema + "." + EFFECTS
            + " (order_id text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())");
        s.execute("CREATE TABLE " + schema + ".expected_ids (order_id text PRIMARY KEY)");
      }
    } catch (SQLException e) {
      throw new IllegalStateException("could not create schema " + schema + " on " + jdbcUrl + ": " + e.getMessage(), e);
    }
    BenchDatabase db = open(jdbcUrl, user, password, schema, poolSize);
    ProcessedEventsSchema.apply(db.dataSource, MARKERS);
    return db;
  }

  /** A pool on an existing run schema (the child consumer's). */
  static BenchDatabase open(String jdbcUrl, String user, String password, String schema, int poolSize) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(jdbcUrl);
    config.setUsername(user);
    if (!password.isEmpty()) {
      config.setPassword(password);
    }
    if (isMariaDb(jdbcUrl)) {
      config.setCatalog(schema); // MariaDB: a database is a catalog (USE)
    } else {
      config.setSchema(schema);
    }
    config.setAutoCommit(poolAutoCommit);
    config.setMaximumPoolSize(poolSize);
    config.setMinimumIdle(0);
    config.setPoolName("bench-" + schema);
    return new BenchDatabase(jdbcUrl, user, password, schema, new HikariDataSource(config));
  }

  void recordExpected(Collection<String> orderIds) {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(true); // the pool's mode may be off (poolAutoCommit)
      if (mariaDb) {
        List<String> ids = List.copyOf(orderIds);
        for (int from = 0; from < ids.size(); from += 1000) {
          List<String> chunk = ids.subList(from, Math.min(ids.size(), from + 1000));
          try (PreparedStatement ps = c.prepareStatement(insertAll("expected_ids", chunk.size()))) {
            bindAll(c, ps, chunk, true);
            ps.executeUpdate();
          }
        }
        return;
      }
      try (PreparedStatement ps = c.prepareStatement(insertAll("expected_ids", -1))) {
        bindAll(c, ps, List.copyOf(orderIds), false);
        ps.executeUpdate();
      }
    } catch (SQLException e) {
      throw new IllegalStateException("could not record the expected ids: " + e.getMessage(), e);
    }
  }

  /**
   * One statement inserting {@code n} order ids into {@code table}: on PostgreSQL {@code INSERT …
   * SELECT unnest(?::text[])} (one array parameter, any {@code n}: pass -1), on MariaDB (no
   * arrays) {@code INSERT … VALUES (?), (?), …} with {@code n} rows.
   */
  static String insertAll(String table, int n) {
    if (n < 0) {
      return "INSERT INTO " + table + " (order_id) SELECT unnest(?::text[])";
    }
    return "INSERT INTO " + table + " (order_id) VALUES " + String.join(", ", java.util.Collections.nCopies(n, "(?)"));
  }

  /** Binds {@code orderIds} to a statement of {@link #insertAll} ({@code rows}: the MariaDB form). */
  static void bindAll(Connection c, PreparedStatement ps, List<String> orderIds, boolean rows) throws SQLException {
    if (rows) {
      for (int i = 0; i < orderIds.size(); i++) {
        ps.setString(i + 1, orderIds.get(i));
      }
    } else {
      ps.setArray(1, c.createArrayOf("text", orderIds.toArray()));
    }
  }

  /**
   * Inserts {@code count} processed-events markers of consumer group {@code group}, processed
   * {@code ageDays} days ago: the backlog a retention purge has to delete.
   */
  void insertExpiredMarkers(String group, int count, int ageDays) {
    execute("INSERT INTO " + MARKERS + " (consumer_group, idempotency_key, key_source, payload_sha256, processed_at)"
        + " SELECT '" + group + "', 'expired-' || g, 'HEADER', sha256(g::text::bytea), now() - interval '"
        + ageDays + " days' FROM generate_series(1, " + count + ") g");
    execute("ANALYZE " + MARKERS);
  }

  /** The run's ledger: effects against the distinct ids published. */
  Ledger ledger() {
    return new Ledger(
        count("SELECT count(*) FROM " + EFFECTS),
        count("SELECT count(DISTINCT order_id) FROM " + EFFECTS),
        count("SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) n FROM " + EFFECTS
            + " GROUP BY order_id HAVING count(*) > 1) d"),
        count("SELECT count(*) FROM expected_ids x WHERE NOT EXISTS (SELECT 1 FROM " + EFFECTS
            + " e WHERE e.order_id = x.order_id)"),
        count("SELECT count(*) FROM expected_ids"),
        count("SELECT count(*) FROM " + MARKERS));
  }

  long effects() {
    return count("SELECT count(*) FROM " + EFFECTS);
  }

  long count(String sql) {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    } catch (SQLException e) {
      throw new IllegalStateException("query failed: " + sql + ": " + e.getMessage(), e);
    }
  }

  private void execute(String sql) {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      c.setAutoCommit(true);
      s.execute(sql);
    } catch (SQLException e) {
      throw new IllegalStateException("statement failed: " + sql + ": " + e.getMessage(), e);
    }
  }

  static Properties props(String user, String password) {
    Properties p = new Properties();
    p.setProperty("user", user);
    if (!password.isEmpty()) {
      p.setProperty("password", password);
    }
    return p;
  }

  /** Closes the pool and drops the schema. */
  @Override
  public void close() {
    dataSource.close();
    try (Connection c = DriverManager.getConnection(jdbcUrl, props(user, password));
        Statement s = c.createStatement()) {
      s.execute(mariaDb ? "DROP DATABASE IF EXISTS " + schema : "DROP SCHEMA IF EXISTS " + schema + " CASCADE");
    } catch (SQLException e) {
      System.err.println("could not drop schema " + schema + ": " + e.getMessage());
    }
  }

  /**
   * A run's ledger.
   *
   * @param effects effect rows
   * @param distinct distinct order ids among them
   * @param doubled effect rows beyond one per order id (0 = nothing applied twice)
   * @param missing published order ids without an effect (0 = nothing lost)
   * @param expected distinct order ids published
   * @param markers rows in the processed-events table
   */
  record Ledger(long effects, long distinct, long doubled, long missing, long expected, long markers) {
    @Override
    public String toString() {
      return "effects=" + effects + " distinct=" + distinct + " doubled=" + doubled + " missing=" + missing
          + " expected=" + expected + " markers=" + markers;
    }
  }
}
