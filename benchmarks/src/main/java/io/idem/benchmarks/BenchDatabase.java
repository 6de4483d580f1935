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
import java.util.Properties;

/**
 * One run's tables, in a schema of its own on the benchmark's PostgreSQL: {@code effects}
 * (the business write, deliberately WITHOUT a unique constraint, so an effect applied twice is a
 * second row), {@code expected_ids} (the distinct order ids published, for the ledger) and Idem's
 * {@code idem_processed_events}. {@link #close()} drops the schema.
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

  private BenchDatabase(String jdbcUrl, String user, String password, String schema, HikariDataSource dataSource) {
    this.jdbcUrl = jdbcUrl;
    this.user = user;
    this.password = password;
    this.schema = schema;
    this.dataSource = dataSource;
  }

  /** Creates schema {@code schema} (dropped first if left over) with the run's tables. */
  static BenchDatabase create(String jdbcUrl, String user, String password, String schema, int poolSize) {
    try (Connection c = DriverManager.getConnection(jdbcUrl, props(user, password));
        Statement s = c.createStatement()) {
      s.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
      s.execute("CREATE SCHEMA " + schema);
      s.execute("CREATE TABLE " + schema + "." + EFFECTS
          + " (order_id text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())");
      s.execute("CREATE TABLE " + schema + ".expected_ids (order_id text PRIMARY KEY)");
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
    config.setSchema(schema);
    config.setMaximumPoolSize(poolSize);
    config.setMinimumIdle(0);
    config.setPoolName("bench-" + schema);
    return new BenchDatabase(jdbcUrl, user, password, schema, new HikariDataSource(config));
  }

  void recordExpected(Collection<String> orderIds) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement("INSERT INTO expected_ids (order_id) SELECT unnest(?::text[])")) {
      ps.setArray(1, c.createArrayOf("text", orderIds.toArray()));
      ps.executeUpdate();
    } catch (SQLException e) {
      throw new IllegalStateException("could not record the expected ids: " + e.getMessage(), e);
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
      s.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
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
