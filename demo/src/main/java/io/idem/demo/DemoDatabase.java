package io.idem.demo;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.fixtures.PostgresFixture;
import io.idem.store.jdbc.ProcessedEventsSchema;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Collection;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSessionFactory;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;

/**
 * The demo's PostgreSQL schema: Idem's processed-events table, the business table
 * {@code demo_payments} (deliberately without a unique constraint, so a doubled effect shows up as
 * a second row) and the list of published order ids, for the ledger.
 */
final class DemoDatabase implements AutoCloseable {
  final String schema;
  final HikariDataSource dataSource;

  private DemoDatabase(String schema, HikariDataSource dataSource) {
    this.schema = schema;
    this.dataSource = dataSource;
  }

  /** Creates a fresh schema with the demo's tables. */
  static DemoDatabase create(String schema) {
    PostgresFixture pg = PostgresFixture.shared();
    pg.createSchema(schema);
    HikariDataSource ds = pg.dataSource(schema, 4);
    try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE IF NOT EXISTS demo_payments (id bigserial PRIMARY KEY,"
          + " order_id text NOT NULL, amount_cents bigint NOT NULL,"
          + " applied_at timestamptz NOT NULL DEFAULT clock_timestamp())");
      s.execute("CREATE INDEX IF NOT EXISTS demo_payments_order_idx ON demo_payments (order_id)");
      s.execute("CREATE TABLE IF NOT EXISTS demo_published (order_id text PRIMARY KEY)");
    } catch (SQLException e) {
      ds.close();
      throw new IllegalStateException("could not create the demo tables in " + schema + ": " + e.getMessage(), e);
    }
    ProcessedEventsSchema.apply(ds, "idem_processed_events");
    return new DemoDatabase(schema, ds);
  }

  /** A connection pool on an existing demo schema (the consumer process's). */
  static DemoDatabase open(String schema, int poolSize) {
    return new DemoDatabase(schema, PostgresFixture.shared().dataSource(schema, poolSize));
  }

  /** The application's MyBatis setup: a session factory with the demo's mapper. */
  SqlSessionFactory sessions() {
    Configuration configuration =
        new Configuration(new Environment("demo", new JdbcTransactionFactory(), dataSource));
    configuration.addMapper(PaymentMapper.class);
    return new SqlSessionFactoryBuilder().build(configuration);
  }

  void recordPublished(Collection<String> orderIds) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(
            "INSERT INTO demo_published (order_id) VALUES (?) ON CONFLICT DO NOTHING")) {
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

  /** Rows in the processed-events table: one per key whose effect committed. */
  long markers() {
    return count("SELECT count(*) FROM idem_processed_events");
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

  private long count(String sql) {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    } catch (SQLException e) {
      throw new IllegalStateException("ledger query failed: " + e.getMessage(), e);
    }
  }

  void dropSchema() {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
    } catch (SQLException e) {
      System.err.println("could not drop " + schema + ": " + e.getMessage());
    }
  }

  @Override
  public void close() {
    dataSource.close();
  }
}
