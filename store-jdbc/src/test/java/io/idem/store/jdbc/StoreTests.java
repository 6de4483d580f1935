package io.idem.store.jdbc;

import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.MessageHandler;
import io.idem.RetryPolicy;
import io.idem.fixtures.PostgresFixture;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Locale;
import java.util.UUID;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.apache.ibatis.session.SqlSession;
import org.jspecify.annotations.Nullable;

/** Pools, pipelines and lock waits for the store's ITs on the real PostgreSQL. */
final class StoreTests {
  /** Attempts of {@link #pipeline}'s policy. */
  static final int MAX_ATTEMPTS = 3;

  private StoreTests() {}

  /** A handler that inserts the message's {@code idempotency-key} header into {@code effects(k)}. */
  static final MessageHandler<SqlSession> INSERT_KEY_INTO_EFFECTS = (message, session) -> {
    try (PreparedStatement ps = session.getConnection().prepareStatement("INSERT INTO effects VALUES (?)")) {
      ps.setString(1, message.header("idempotency-key"));
      ps.executeUpdate();
    }
  };

  /** A new schema's name, {@code prefix_<random>}; created. */
  static String newSchema(String prefix) {
    String schema = (prefix + "_" + UUID.randomUUID().toString().substring(0, 8))
        .toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9_]", "_");
    PostgresFixture.shared().createSchema(schema);
    return schema;
  }

  /**
   * A Hikari pool on {@code schema} whose connections say {@code applicationName} in
   * pg_stat_activity; {@code url} replaces the fixture's (a proxy, a closed port) when given.
   */
  static HikariDataSource pool(
      String schema, String applicationName, @Nullable String url, Consumer<HikariConfig> tweak) {
    PostgresFixture postgres = PostgresFixture.shared();
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url == null ? postgres.jdbcUrl() : url);
    config.setUsername(postgres.user());
    if (!postgres.password().isEmpty()) {
      config.setPassword(postgres.password());
    }
    config.setSchema(schema);
    config.setMaximumPoolSize(4);
    config.setMinimumIdle(0);
    config.setConnectionTimeout(2_000);
    config.setInitializationFailTimeout(-1);
    config.addDataSourceProperty("ApplicationName", applicationName);
    config.setPoolName(applicationName);
    tweak.accept(config);
    return new HikariDataSource(config);
  }

  /** A pipeline of {@value #MAX_ATTEMPTS} attempts with 10 ms backoffs. */
  static IdempotentConsumer<SqlSession> pipeline(
      MyBatisProcessedEventStore store, MessageHandler<SqlSession> handler, boolean retryIntegrityViolations) {
    return IdempotentConsumer.builder(store)
        .consumerGroup("classify")
        .handler(handler)
        .retryPolicy(RetryPolicy.builder().maxAttempts(MAX_ATTEMPTS)
            .initialBackoff(Duration.ofMillis(10)).maxBackoff(Duration.ofMillis(10))
            .retryIntegrityViolations(retryIntegrityViolations).build())
        .build();
  }

  /** A message keyed {@code key} (header {@code idempotency-key}), on delivery {@code attempt}. */
  static InboundMessage message(String key, String payload, int attempt) {
    return InboundMessage.builder("orders", payload.getBytes(StandardCharsets.UTF_8))
        .header("idempotency-key", key).deliveryAttempt(attempt).build();
  }

  static void execute(DataSource dataSource, String... sql) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      for (String each : sql) {
        s.execute(each);
      }
    }
  }

  /** Runs {@code sql} on the session's connection (the pipeline's transaction). */
  static void execute(SqlSession session, String sql) throws SQLException {
    try (Statement s = session.getConnection().createStatement()) {
      s.execute(sql);
    }
  }

  static long count(DataSource dataSource, String sql) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /**
   * Waits until a backend of {@code applicationName} waits for a lock (pg_stat_activity's
   * {@code wait_event_type = 'Lock'}): an event, never a sleep.
   */
  static void awaitLockWait(DataSource observer, String applicationName) {
    await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(20)).until(() -> {
      try (Connection c = observer.getConnection();
          PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM pg_stat_activity"
              + " WHERE application_name = ? AND wait_event_type = 'Lock'")) {
        ps.setString(1, applicationName);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          return rs.getInt(1) > 0;
        }
      }
    });
  }
}
