package io.idem.it;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.idem.fixtures.PostgresFixture;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.Properties;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A PostgreSQL database of its own on the fixture's server, so that database-wide statistics
 * ({@code pg_stat_database.deadlocks}) and sessions ({@code pg_stat_activity}) are this test's
 * alone. Created with a unique name, dropped (sessions terminated) on {@link #close()}.
 */
final class ScratchDatabase implements AutoCloseable {
  private static final Pattern URL = Pattern.compile("^(jdbc:postgresql://[^/]+/)([^?]*)(.*)$");

  final String name;
  final String url;
  private final PostgresFixture server;

  private ScratchDatabase(String name, String url, PostgresFixture server) {
    this.name = name;
    this.url = url;
    this.server = server;
  }

  /**
   * Creates database {@code <prefix>_<random>}.
   *
   * @throws IllegalStateException when the fixture's user may not create databases
   */
  static ScratchDatabase create(String prefix) {
    PostgresFixture server = PostgresFixture.shared();
    Matcher m = URL.matcher(server.jdbcUrl());
    if (!m.matches()) {
      throw new IllegalStateException("cannot derive a database URL from " + server.jdbcUrl());
    }
    String name = (prefix + "_" + UUID.randomUUID().toString().substring(0, 8)).toLowerCase(Locale.ROOT)
        .replaceAll("[^a-z0-9_]", "_");
    try (Connection c = admin(server); Statement s = c.createStatement()) {
      s.execute("CREATE DATABASE " + name);
    } catch (SQLException e) {
      throw new IllegalStateException("could not create database " + name + " on " + server.origin()
          + " (the user of IDEM_POSTGRES_URL needs CREATEDB for this test): " + e.getMessage(), e);
    }
    return new ScratchDatabase(name, m.group(1) + name + m.group(3), server);
  }

  private static Connection admin(PostgresFixture server) throws SQLException {
    Properties props = new Properties();
    props.setProperty("user", server.user());
    if (!server.password().isEmpty()) {
      props.setProperty("password", server.password());
    }
    return DriverManager.getConnection(server.jdbcUrl(), props);
  }

  /** Creates {@code schema} (an identifier of [a-z0-9_]) in this database. */
  void createSchema(String schema) {
    if (!schema.matches("[a-z_][a-z0-9_]{0,62}")) {
      throw new IllegalArgumentException("schema must match [a-z_][a-z0-9_]{0,62}, but was '" + schema + "'");
    }
    Properties props = new Properties();
    props.setProperty("user", server.user());
    if (!server.password().isEmpty()) {
      props.setProperty("password", server.password());
    }
    try (Connection c = DriverManager.getConnection(url, props); Statement s = c.createStatement()) {
      s.execute("CREATE SCHEMA " + schema);
    } catch (SQLException e) {
      throw new IllegalStateException("could not create schema " + schema + " in " + name + ": " + e.getMessage(), e);
    }
  }

  /**
   * A pool on this database whose connections use {@code schema}, which must exist; its sessions
   * show {@code poolName} as {@code application_name}.
   */
  HikariDataSource pool(String schema, int maxPoolSize, String poolName) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setUsername(server.user());
    if (!server.password().isEmpty()) {
      config.setPassword(server.password());
    }
    config.setMaximumPoolSize(maxPoolSize);
    config.setMinimumIdle(0);
    config.setConnectionTimeout(10_000);
    config.setPoolName(poolName);
    config.addDataSourceProperty("ApplicationName", poolName);
    config.setSchema(schema);
    return new HikariDataSource(config);
  }

  /** {@code pg_stat_database.deadlocks} of this database, read afresh. */
  long deadlocks() {
    return query("SELECT coalesce(deadlocks, 0) FROM pg_stat_database WHERE datname = ?");
  }

  /** Sessions on this database whose {@code pg_stat_activity.state} is {@code state}. */
  long sessions(String state) {
    try (Connection c = admin(server);
        PreparedStatement ps = c.prepareStatement(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = ? AND state = ?")) {
      ps.setString(1, name);
      ps.setString(2, state);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    } catch (SQLException e) {
      throw new IllegalStateException("could not read pg_stat_activity: " + e.getMessage(), e);
    }
  }

  /** Sessions on this database whose {@code application_name} starts with {@code prefix}. */
  long connections(String prefix) {
    return query("SELECT count(*) FROM pg_stat_activity WHERE datname = ? AND application_name LIKE ?",
        prefix.replace("_", "\\_").replace("%", "\\%") + "%");
  }

  private long query(String sql, String... more) {
    try (Connection c = admin(server); PreparedStatement ps = c.prepareStatement(sql)) {
      c.createStatement().execute("SELECT pg_stat_clear_snapshot()");
      ps.setString(1, name);
      for (int i = 0; i < more.length; i++) {
        ps.setString(2 + i, more[i]);
      }
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getLong(1) : 0;
      }
    } catch (SQLException e) {
      throw new IllegalStateException("could not run " + sql + ": " + e.getMessage(), e);
    }
  }

  @Override
  public void close() {
    try (Connection c = admin(server); Statement s = c.createStatement()) {
      s.execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
    } catch (SQLException e) {
      System.err.println("could not drop database " + name + ": " + e.getMessage());
    }
  }
}
