package io.idem.rabbitmq;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.IdempotencyKey;
import io.idem.KeySource;
import io.idem.MessageHandler;
import io.idem.fixtures.PostgresFixture;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.UUID;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;

/**
 * A fresh PostgreSQL schema with the processed-events store and an {@code effects} table without
 * a unique constraint (a doubled effect shows as two rows). Also opened by crash-test children.
 */
final class TestDatabase implements AutoCloseable {
  final String schema;
  final HikariDataSource dataSource;
  final MyBatisProcessedEventStore store;

  private TestDatabase(String schema) {
    this.schema = schema;
    PostgresFixture postgres = PostgresFixture.shared();
    postgres.createSchema(schema);
    this.dataSource = postgres.dataSource(schema, 5);
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE IF NOT EXISTS effects (id bigserial PRIMARY KEY, idem_key text NOT NULL,"
          + " attempt int NOT NULL)");
    } catch (SQLException e) {
      throw new IllegalStateException("could not create effects in " + schema + ": " + e, e);
    }
    this.store = MyBatisProcessedEventStore.builder(
            new SqlSessionFactoryBuilder().build(new Configuration(
                new Environment("rabbit-it", new JdbcTransactionFactory(), dataSource))))
        .createTableIfMissing(true)
        .build();
  }

  static TestDatabase fresh(String prefix) {
    return new TestDatabase((prefix + "_" + UUID.randomUUID().toString().substring(0, 8))
        .toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9_]", "_"));
  }

  static TestDatabase open(String schema) {
    return new TestDatabase(schema);
  }

  /** Writes one effect row in the handler's transaction. */
  static void record(SqlSession session, String key, int attempt) throws SQLException {
    try (PreparedStatement ps = session.getConnection()
        .prepareStatement("INSERT INTO effects (idem_key, attempt) VALUES (?, ?)")) {
      ps.setString(1, key);
      ps.setInt(2, attempt);
      ps.executeUpdate();
    }
  }

  /** The handler writing one effect per call, keyed by the idempotency-key header. */
  static MessageHandler<SqlSession> recordingHandler() {
    return (message, session) ->
        record(session, String.valueOf(message.header("idempotency-key")), message.deliveryAttempt());
  }

  int effects(String key) {
    return count("SELECT count(*) FROM effects WHERE idem_key = ?", key);
  }

  int totalEffects() {
    return count("SELECT count(*) FROM effects WHERE ? IS NOT NULL", "");
  }

  boolean processed(String group, String key) {
    return store.isProcessed(new IdempotencyKey(group, key, KeySource.HEADER));
  }

  private int count(String sql, String arg) {
    try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, arg);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    } catch (SQLException e) {
      throw new IllegalStateException("could not count effects: " + e, e);
    }
  }

  @Override
  public void close() {
    dataSource.close();
  }
}
