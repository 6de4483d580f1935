package io.idem.benchmarks;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Statements the server executed during a run, from PostgreSQL's {@code pg_stat_statements}
 * (the extension must be preloaded and created in the database: {@code shared_preload_libraries
 * = 'pg_stat_statements'}, {@code CREATE EXTENSION pg_stat_statements}). The counts are
 * server-wide since {@link #reset()}: use a PostgreSQL that nothing else uses meanwhile. They are
 * statements, not round trips: pgjdbc sends {@code BEGIN} with the first statement, and Idem's
 * commit check travels with its {@code COMMIT} (and, in a run, with the next claim).
 */
final class StatementCounts {
  private final String url;
  private final String user;
  private final String password;

  StatementCounts(String url, String user, String password) {
    this.url = url;
    this.user = user;
    this.password = password;
  }

  /** Forgets the counts so far. */
  void reset() throws SQLException {
    try (Connection c = DriverManager.getConnection(url, BenchDatabase.props(user, password));
        Statement s = c.createStatement()) {
      s.execute("SELECT pg_stat_statements_reset()");
    }
  }

  /** Lines {@code calls/event  mean_ms  query} of the statements executed since {@link #reset()}, most frequent first. */
  List<String> report(int events) throws SQLException {
    List<String> lines = new ArrayList<>();
    try (Connection c = DriverManager.getConnection(url, BenchDatabase.props(user, password));
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT calls, mean_exec_time, regexp_replace(query, '\\s+', ' ', 'g')"
            + " FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%' ORDER BY calls DESC LIMIT 15")) {
      while (rs.next()) {
        String query = rs.getString(3);
        lines.add(String.format(Locale.ROOT, "%7.3f/event %8.3f ms  %s", rs.getLong(1) / (double) events,
            rs.getDouble(2), query.length() > 160 ? query.substring(0, 160) + "…" : query));
      }
    }
    return lines;
  }
}
