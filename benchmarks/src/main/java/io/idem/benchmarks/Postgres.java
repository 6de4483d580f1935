package io.idem.benchmarks;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSessionFactory;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;

/** PostgreSQL chores: the server's settings for the record, a MyBatis factory on a run's pool. */
final class Postgres {
  private Postgres() {}

  /** The server version and the settings that decide a commit's cost. */
  static String settings(String url, String user, String password) {
    return serverSettings(url, user, password, "SHOW %s", "server_version", "fsync", "synchronous_commit",
        "full_page_writes", "wal_sync_method", "shared_buffers", "max_wal_size", "checkpoint_timeout");
  }

  /**
   * {@code name=value} for each of {@code names}, each read with {@code query} ({@code SHOW %s}, or
   * MariaDB's {@code SELECT @@%s}), then the JDBC driver; {@code ?} and the error when the server
   * cannot be asked.
   */
  static String serverSettings(String url, String user, String password, String query, String... names) {
    StringBuilder b = new StringBuilder();
    try (Connection c = DriverManager.getConnection(url, BenchDatabase.props(user, password));
        Statement s = c.createStatement()) {
      for (String name : names) {
        try (ResultSet rs = s.executeQuery(String.format(query, name))) {
          rs.next();
          b.append(name).append('=').append(rs.getString(1)).append(' ');
        }
      }
      b.append("driver=").append(c.getMetaData().getDriverName()).append(' ').append(c.getMetaData().getDriverVersion());
    } catch (SQLException e) {
      return "? (" + e.getMessage() + ")";
    }
    return b.toString().trim();
  }

  /**
   * The pid of the server's postmaster: the parent of the backend serving a new connection ({@code
   * pg_backend_pid()}), read while that backend lives; 0 when the server is not on this machine.
   */
  static long postmasterPid(String url, String user, String password) {
    try (Connection c = DriverManager.getConnection(url, BenchDatabase.props(user, password));
        Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
      rs.next();
      return CpuShares.postmasterOf(rs.getLong(1));
    } catch (SQLException e) {
      return 0;
    }
  }

  static SqlSessionFactory sessions(BenchDatabase db) {
    return new SqlSessionFactoryBuilder().build(
        new Configuration(new Environment("bench-purge", new JdbcTransactionFactory(), db.dataSource)));
  }

  /** A MyBatis factory on {@code dataSource} (MyBatis' JDBC transactions). */
  static SqlSessionFactory sessionsOn(javax.sql.DataSource dataSource) {
    return new SqlSessionFactoryBuilder().build(
        new Configuration(new Environment("bench-http", new JdbcTransactionFactory(), dataSource)));
  }
}
