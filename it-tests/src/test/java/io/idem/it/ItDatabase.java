package io.idem.it;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.idem.IdempotencyKeyExtractor;
import io.idem.KeyExtraction;
import io.idem.MessageHandler;
import io.idem.fixtures.PostgresFixture;
import io.idem.fixtures.TcpProxy;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;
import org.jspecify.annotations.Nullable;

/**
 * A fresh PostgreSQL schema for one test: the processed-events store the consumer uses, an
 * {@code it_effects} table (no unique constraint, so a doubled effect shows as two rows), and a
 * separate pool for the test's own queries. {@link #throughProxy} puts a {@link TcpProxy} between
 * the consumer's pool and PostgreSQL, so the test can take the database away from the consumer
 * while it still reads the tables itself.
 */
final class ItDatabase implements AutoCloseable {
  private static final Pattern URL =
      Pattern.compile("jdbc:postgresql://([^/:,?]+)(?::(\\d+))?(/[^?]*)(\\?.*)?");

  final String schema;
  /** The test's own connections, never cut. */
  final HikariDataSource direct;
  /** The consumer's pool: through the proxy when there is one. */
  final HikariDataSource consumerPool;
  final MyBatisProcessedEventStore store;
  final @Nullable TcpProxy proxy;

  private ItDatabase(String prefix, boolean viaProxy) throws IOException {
    PostgresFixture postgres = PostgresFixture.shared();
    this.schema = (prefix + "_" + UUID.randomUUID().toString().substring(0, 8))
        .toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9_]", "_");
    postgres.createSchema(schema);
    this.direct = postgres.dataSource(schema, 3);
    exec("CREATE TABLE it_effects (id bigserial PRIMARY KEY, idem_key text NOT NULL,"
        + " attempt int NOT NULL, payload_length int NOT NULL)");
    if (viaProxy) {
      Matcher m = URL.matcher(postgres.jdbcUrl());
      if (!m.matches()) {
        throw new IllegalStateException("cannot put a proxy in front of PostgreSQL at "
            + postgres.jdbcUrl() + ": expected jdbc:postgresql://host[:port]/database[?…]");
      }
      this.proxy = new TcpProxy(m.group(1), m.group(2) == null ? 5432 : Integer.parseInt(m.group(2)));
      String url = "jdbc:postgresql://127.0.0.1:" + proxy.port() + m.group(3)
          + (m.group(4) == null ? "" : m.group(4));
      this.consumerPool = outagePool(url, postgres);
    } else {
      this.proxy = null;
      this.consumerPool = postgres.dataSource(schema, 6);
    }
    this.store = MyBatisProcessedEventStore.builder(new SqlSessionFactoryBuilder().build(new Configuration(
            new Environment("it", new JdbcTransactionFactory(), consumerPool))))
        .createTableIfMissing(true)
        .build();
  }

  /** A schema the consumer reaches directly. */
  static ItDatabase direct(String prefix) throws IOException {
    return new ItDatabase(prefix, false);
  }

  /** A schema the consumer reaches through a {@link TcpProxy} ({@link #proxy}). */
  static ItDatabase throughProxy(String prefix) throws IOException {
    return new ItDatabase(prefix, true);
  }

  /**
   * The consumer's pool as an application would size it for fast failure: a connection that
   * cannot be had in 500 ms fails the transaction (the pipeline then retries it), and a socket
   * that hangs is given up after 5 s.
   */
  private HikariDataSource outagePool(String url, PostgresFixture postgres) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setUsername(postgres.user());
    if (!postgres.password().isEmpty()) {
      config.setPassword(postgres.password());
    }
    config.setSchema(schema);
    config.setMaximumPoolSize(6);
    config.setMinimumIdle(0);
    config.setConnectionTimeout(500);
    config.setValidationTimeout(250);
    config.setInitializationFailTimeout(-1);
    config.addDataSourceProperty("connectTimeout", "2");
    config.addDataSourceProperty("socketTimeout", "5");
    config.setPoolName("idem-it-proxied-" + schema);
    return new HikariDataSource(config);
  }

  /**
   * A handler writing one {@code it_effects} row per call in the pipeline's transaction, keyed by
   * what {@code keys} extracts (the pipeline's own extractor, so the row carries the claimed key).
   */
  static MessageHandler<SqlSession> recording(IdempotencyKeyExtractor keys) {
    return (message, session) -> {
      KeyExtraction found = keys.extract(message);
      String key = found instanceof KeyExtraction.Found f ? f.value() : "(none: " + found + ")";
      try (PreparedStatement ps = session.getConnection().prepareStatement(
          "INSERT INTO it_effects (idem_key, attempt, payload_length) VALUES (?, ?, ?)")) {
        ps.setString(1, key);
        ps.setInt(2, message.deliveryAttempt());
        ps.setInt(3, message.payload().length);
        ps.executeUpdate();
      }
    };
  }

  int effects(String key) {
    return count("SELECT count(*) FROM it_effects WHERE idem_key = ?", key);
  }

  int totalEffects() {
    return count("SELECT count(*) FROM it_effects WHERE ? IS NOT NULL", "");
  }

  int distinctKeys() {
    return count("SELECT count(DISTINCT idem_key) FROM it_effects WHERE ? IS NOT NULL", "");
  }

  /** Keys with more than one effect row. */
  int doubled() {
    return count("SELECT count(*) FROM (SELECT idem_key FROM it_effects WHERE ? IS NOT NULL"
        + " GROUP BY idem_key HAVING count(*) > 1) d", "");
  }

  /** Effect rows written on a delivery attempt above 1. */
  int appliedOnALaterAttempt() {
    return count("SELECT count(*) FROM it_effects WHERE ? IS NOT NULL AND attempt > 1", "");
  }

  /** Payload length of the one effect of {@code key}, or -1. */
  int payloadLength(String key) {
    List<String> rows = strings("SELECT payload_length::text FROM it_effects WHERE idem_key = ?", key);
    return rows.size() == 1 ? Integer.parseInt(rows.get(0)) : -1;
  }

  /** Every effect's key, one per row. */
  List<String> effectKeys() {
    return strings("SELECT idem_key FROM it_effects WHERE ? IS NOT NULL ORDER BY id", "");
  }

  /** Keys the store recorded as processed for {@code group}. */
  List<String> processedKeys(String group) {
    return strings("SELECT idempotency_key FROM " + MyBatisProcessedEventStore.DEFAULT_TABLE
        + " WHERE consumer_group = ? ORDER BY processed_at", group);
  }

  void exec(String sql) {
    try (Connection c = direct.getConnection(); Statement s = c.createStatement()) {
      s.execute(sql);
    } catch (SQLException e) {
      throw new IllegalStateException(sql + " failed in " + schema + ": " + e.getMessage(), e);
    }
  }

  int count(String sql, String arg) {
    return Integer.parseInt(strings(sql, arg).get(0));
  }

  private List<String> strings(String sql, String arg) {
    return query(direct, sql, arg);
  }

  private static List<String> query(DataSource ds, String sql, String arg) {
    try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, arg);
      List<String> out = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(rs.getString(1));
        }
      }
      return out;
    } catch (SQLException e) {
      throw new IllegalStateException(sql + " failed: " + e.getMessage(), e);
    }
  }

  @Override
  public void close() {
    consumerPool.close();
    direct.close();
    if (proxy != null) {
      proxy.close();
    }
  }
}
