package io.idem.jms;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.IdempotencyListener;
import io.idem.IdempotentConsumer;
import io.idem.MessageHandler;
import io.idem.RetryPolicy;
import io.idem.fixtures.PostgresFixture;
import io.idem.fixtures.TestSchemas;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import javax.sql.DataSource;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;

/** One PostgreSQL schema per test JVM, the store on it, and an effects table for assertions. */
final class JmsTestDatabase {
  private static HikariDataSource dataSource;
  private static MyBatisProcessedEventStore store;

  private JmsTestDatabase() {}

  static synchronized HikariDataSource dataSource() {
    if (dataSource == null) {
      dataSource = PostgresFixture.shared().newSchema("jms_it");
      TestSchemas.keepForJvm(dataSource.getSchema()); // shared by this JVM's test classes
    }
    return dataSource;
  }

  /** The schema's name, for child JVMs. */
  static String schema() {
    return dataSource().getSchema();
  }

  static SqlSessionFactory sessions(DataSource ds) {
    return new SqlSessionFactoryBuilder()
        .build(new Configuration(new Environment("jms-it", new JdbcTransactionFactory(), ds)));
  }

  static synchronized MyBatisProcessedEventStore store() {
    if (store == null) {
      store = MyBatisProcessedEventStore.builder(sessions(dataSource())).createTableIfMissing(true).build();
    }
    return store;
  }

  /** A pipeline on the shared store; a fresh consumer group unless the caller passes one. */
  static IdempotentConsumer<SqlSession> pipeline(
      String group, MessageHandler<SqlSession> handler, RetryPolicy retry, IdempotencyListener... listeners) {
    IdempotentConsumer.Builder<SqlSession> b =
        IdempotentConsumer.builder(store()).consumerGroup(group).handler(handler).retryPolicy(retry);
    for (IdempotencyListener l : listeners) {
      b.listener(l);
    }
    return b.build();
  }

  /** {@code n} attempts, 50 ms fixed backoff, no jitter. */
  static RetryPolicy attempts(int n) {
    return RetryPolicy.builder().maxAttempts(n).initialBackoff(Duration.ofMillis(50))
        .maxBackoff(Duration.ofMillis(50)).multiplier(1.0).jitter(0).build();
  }

  /** A unique name safe for queues and consumer groups. */
  static String unique(String prefix) {
    return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
  }

  /**
   * Effect rows of one run, written through the handler's session so that they join the dedup
   * transaction; no unique constraint, so a doubled effect shows as two rows.
   */
  static final class Effects {
    private final DataSource ds;
    final String run;

    Effects(DataSource ds, String run) {
      this.ds = ds;
      this.run = run;
      try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
        s.execute("CREATE TABLE IF NOT EXISTS jms_effects (id bigserial PRIMARY KEY,"
            + " run_id text NOT NULL, idem_key text NOT NULL)");
      } catch (SQLException e) {
        throw new IllegalStateException(e);
      }
    }

    static Effects newRun() {
      return new Effects(dataSource(), UUID.randomUUID().toString());
    }

    void record(SqlSession session, String key) throws SQLException {
      try (PreparedStatement ps = session.getConnection()
          .prepareStatement("INSERT INTO jms_effects (run_id, idem_key) VALUES (?, ?)")) {
        ps.setString(1, run);
        ps.setString(2, key);
        ps.executeUpdate();
      }
    }

    int count(String key) {
      return query("SELECT count(*) FROM jms_effects WHERE run_id = ? AND idem_key = ?", key);
    }

    int total() {
      return query("SELECT count(*) FROM jms_effects WHERE run_id = ? AND ? IS NOT NULL", "");
    }

    int doubled() {
      return query("SELECT count(*) FROM (SELECT idem_key FROM jms_effects WHERE run_id = ?"
          + " AND ? IS NOT NULL GROUP BY idem_key HAVING count(*) > 1) d", "");
    }

    private int query(String sql, String key) {
      try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
        ps.setString(1, run);
        ps.setString(2, key);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          return rs.getInt(1);
        }
      } catch (SQLException e) {
        throw new IllegalStateException(e);
      }
    }
  }
}
