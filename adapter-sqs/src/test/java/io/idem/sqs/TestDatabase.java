package io.idem.sqs;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.fixtures.PostgresFixture;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;

/**
 * A fresh schema with the processed-events store and an {@code effects} table without a unique
 * constraint (a doubled effect shows up as two rows), for the SQS-specific tests and the crash
 * child.
 */
final class TestDatabase implements AutoCloseable {
  final HikariDataSource dataSource;
  final String schema;
  final SqlSessionFactory sessions;
  final MyBatisProcessedEventStore store;

  private TestDatabase(HikariDataSource dataSource, String schema) {
    this.dataSource = dataSource;
    this.schema = schema;
    this.sessions = sessions(dataSource);
    this.store = MyBatisProcessedEventStore.builder(sessions).createTableIfMissing(true).build();
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE IF NOT EXISTS effects (id bigserial PRIMARY KEY, idem_key text NOT NULL,"
          + " payload bytea NOT NULL)");
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  static TestDatabase create(String prefix) {
    HikariDataSource ds = PostgresFixture.shared().newSchema(prefix);
    return new TestDatabase(ds, ds.getSchema());
  }

  /** The same schema from another process (the crash child). */
  static TestDatabase attach(String url, String user, String password, String schema) {
    com.zaxxer.hikari.HikariConfig config = new com.zaxxer.hikari.HikariConfig();
    config.setJdbcUrl(url);
    config.setUsername(user);
    if (!password.isEmpty()) {
      config.setPassword(password);
    }
    config.setSchema(schema);
    config.setMaximumPoolSize(4);
    return new TestDatabase(new HikariDataSource(config), schema);
  }

  static SqlSessionFactory sessions(DataSource ds) {
    return new SqlSessionFactoryBuilder()
        .build(new Configuration(new Environment("sqs-it", new JdbcTransactionFactory(), ds)));
  }

  /** Writes one effect row in the handler's transaction. */
  static void record(SqlSession session, String key, byte[] payload) throws SQLException {
    try (PreparedStatement ps = session.getConnection()
        .prepareStatement("INSERT INTO effects (idem_key, payload) VALUES (?, ?)")) {
      ps.setString(1, key);
      ps.setBytes(2, payload);
      ps.executeUpdate();
    }
  }

  int count(String key) {
    return query("SELECT count(*) FROM effects WHERE idem_key = '" + key.replace("'", "''") + "'");
  }

  int total() {
    return query("SELECT count(*) FROM effects");
  }

  int doubled() {
    return query("SELECT count(*) FROM (SELECT idem_key FROM effects GROUP BY idem_key HAVING count(*) > 1) d");
  }

  /** Keys in commit order of their effect rows. */
  List<String> order() {
    List<String> keys = new ArrayList<>();
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT idem_key FROM effects ORDER BY id")) {
      while (rs.next()) {
        keys.add(rs.getString(1));
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
    return keys;
  }

  private int query(String sql) {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getInt(1);
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  public void close() {
    dataSource.close();
  }
}
