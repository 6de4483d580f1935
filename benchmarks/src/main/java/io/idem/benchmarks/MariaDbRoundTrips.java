package io.idem.benchmarks;

import io.idem.fixtures.MariaDbFixture;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.UUID;

/**
 * Can MariaDB Connector/J send the next message's claim with the COMMIT, as Idem's runs do on
 * pgjdbc (BENCHMARKS.md, "MariaDB")? Plain JDBC on one connection, in a scratch database, the
 * shapes of one message's transaction timed in interleaved rounds (transactions per second):
 *
 * <ul>
 *   <li>{@code plain}: {@code INSERT effect; COMMIT} — the plain consumer, 2 round trips;
 *   <li>{@code idem}: {@code INSERT marker; INSERT effect; SELECT marker; COMMIT} — Idem's per-message
 *       transaction on MariaDB today (the claim, the handler's write, the re-read, the commit), 4;
 *   <li>{@code idem-autocommit}: the same, each transaction opened and closed as MyBatis'
 *       {@code JdbcTransaction} does on a pool in auto-commit mode ({@code setAutoCommit(false)}
 *       first, {@code setAutoCommit(true)} at close): Connector/J sends each as a {@code set
 *       autocommit} query (pgjdbc keeps the mode on the client), 6;
 *   <li>{@code idem-pipelined}: the same, with the COMMIT and the next message's claim sent as one
 *       JDBC {@code Statement} batch (Connector/J writes every statement of a text batch before it
 *       reads the first answer: one round trip for both), 3;
 *   <li>{@code idem-multi}: the same with {@code COMMIT; INSERT …} as one multi-statement query
 *       ({@code allowMultiQueries=true}), 3.
 * </ul>
 *
 * Arguments: {@code [transactions per run, default 2000] [rounds, default 3]}. The server is the
 * fixtures' MariaDB ({@code IDEM_MARIADB_URL}, …).
 */
public final class MariaDbRoundTrips {
  private MariaDbRoundTrips() {}

  public static void main(String[] args) throws Exception {
    int n = args.length > 0 ? Integer.parseInt(args[0]) : 2000;
    int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 3;
    MariaDbFixture mariaDb = MariaDbFixture.shared();
    String database = "rt_" + UUID.randomUUID().toString().substring(0, 8);
    mariaDb.createDatabase(database);
    String url = mariaDb.jdbcUrl(database);
    try {
      System.out.println("mariadb: " + MariaDbSettings.describe(url, mariaDb.user(), mariaDb.password()));
      for (int round = 0; round <= rounds; round++) { // round 0: warm-up
        double plain = run(url, mariaDb, "plain", n, round);
        double idem = run(url, mariaDb, "idem", n, round);
        double toggled = run(url, mariaDb, "idem-autocommit", n, round);
        double pipelined = run(url, mariaDb, "idem-pipelined", n, round);
        double multi = run(url, mariaDb, "idem-multi", n, round);
        if (round > 0) {
          System.out.printf(Locale.ROOT, "RATIO round=%d idem/plain=%.2f idem-autocommit/plain=%.2f"
              + " idem-pipelined/plain=%.2f idem-multi/plain=%.2f idem-pipelined/idem=%.2f load=[%s]%n", round,
              idem / plain, toggled / plain, pipelined / plain, multi / plain, pipelined / idem, SideBySide.Load.now());
        }
      }
    } finally {
      try (Connection c = DriverManager.getConnection(url, BenchDatabase.props(mariaDb.user(), mariaDb.password()));
          Statement s = c.createStatement()) {
        s.execute("DROP DATABASE " + database);
      }
    }
  }

  private static double run(String url, MariaDbFixture mariaDb, String shape, int n, int round) throws SQLException {
    String connectUrl = shape.equals("idem-multi") ? url + (url.contains("?") ? "&" : "?") + "allowMultiQueries=true" : url;
    try (Connection c = DriverManager.getConnection(connectUrl, BenchDatabase.props(mariaDb.user(), mariaDb.password()));
        Statement ddl = c.createStatement()) {
      ddl.execute("DROP TABLE IF EXISTS markers, effects");
      ddl.execute("CREATE TABLE markers (consumer_group varchar(128) NOT NULL, idempotency_key varchar(512) NOT NULL,"
          + " PRIMARY KEY (consumer_group, idempotency_key)) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin");
      ddl.execute("CREATE TABLE effects (order_id varchar(64) NOT NULL)");
      c.setAutoCommit(false);
      try (PreparedStatement claim = c.prepareStatement("INSERT INTO markers VALUES ('g', ?)");
          PreparedStatement effect = c.prepareStatement("INSERT INTO effects VALUES (?)");
          PreparedStatement reread = c.prepareStatement(
              "SELECT 1 FROM markers WHERE consumer_group = 'g' AND idempotency_key = ?");
          Statement text = c.createStatement()) {
        long start = System.nanoTime();
        if (shape.equals("idem-pipelined") || shape.equals("idem-multi")) {
          claim.setString(1, "k0");
          claim.executeUpdate();
        }
        boolean toggles = shape.equals("idem-autocommit");
        if (toggles) {
          c.setAutoCommit(true); // as the pool hands it out
        }
        for (int i = 0; i < n; i++) {
          String key = "k" + i;
          if (toggles) {
            c.setAutoCommit(false);
          }
          if (shape.equals("idem") || toggles) {
            claim.setString(1, key);
            claim.executeUpdate();
          }
          effect.setString(1, key);
          effect.executeUpdate();
          if (!shape.equals("plain")) {
            reread.setString(1, key);
            try (ResultSet rs = reread.executeQuery()) {
              if (!rs.next()) {
                throw new IllegalStateException("marker " + key + " not found");
              }
            }
          }
          String next = "INSERT INTO markers VALUES ('g', 'k" + (i + 1) + "')";
          if (shape.equals("idem-pipelined") && i + 1 < n) {
            text.addBatch("COMMIT");
            text.addBatch(next);
            text.executeBatch();
          } else if (shape.equals("idem-multi") && i + 1 < n) {
            text.execute("COMMIT; " + next);
          } else {
            c.commit();
          }
          if (toggles) {
            c.setAutoCommit(true);
          }
        }
        double perSecond = n / ((System.nanoTime() - start) / 1e9);
        System.out.printf(Locale.ROOT, "RESULT round=%d shape=%s transactions/s=%.0f%n", round, shape, perSecond);
        return perSecond;
      }
    }
  }
}
