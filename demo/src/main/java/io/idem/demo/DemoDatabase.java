package io.idem.demo;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.fixtures.PostgresFixture;
import io.idem.store.jdbc.Outbox;
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
 * a second row) and the list of published order ids, for the ledger; for the receipts, Idem's
 * outbox table {@value Outbox#DEFAULT_TABLE} and the downstream consumer's table
 * {@code demo_receipts} (no unique constraint either).
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
      s.execute("CREATE TABLE IF NOT EXISTS demo_receipts (id bigserial PRIMARY KEY,"
          + " order_id text NOT NULL, amount_cents bigint NOT NULL,"
          + " applied_at timestamptz NOT NULL DEFAULT clock_timestamp())");
      s.execute("CREATE INDEX IF NOT EXISTS demo_receipts_order_idx ON demo_receipts (order_id)");
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
    return new DemoDatabase(schema, PostgresFixture.shared().dataSource(schema, poolSize));
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
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM " + Outbox.DEFAULT_TABLE
            + " WHERE id = ANY (?) AND sent_at IS NULL AND parked_at IS NULL")) {
      ps.setArray(1, c.createArrayOf("bigint", ids.toArray()));
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
