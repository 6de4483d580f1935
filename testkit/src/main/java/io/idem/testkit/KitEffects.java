package io.idem.testkit;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;
import org.apache.ibatis.session.SqlSession;

/**
 * The business table the adapter kit's handlers write to, through the handler's own
 * {@link SqlSession} so that the write joins the dedup transaction. It deliberately has no unique
 * constraint: a doubled effect must show up as two rows, not be hidden by the database. Public so
 * that adapters' own tests share it instead of copying an effects table: one instance per run id
 * (rows of other runs are never counted). Thread-safe; each count opens its own connection.
 */
public final class KitEffects {
  /** The table's name: {@value}. */
  public static final String TABLE = "idem_kit_effects";

  private final DataSource dataSource;
  private final String run;

  /**
   * @param dataSource the PostgreSQL or MariaDB the handlers' sessions write to
   * @param run this run's id; every row written and counted carries it
   */
  public KitEffects(DataSource dataSource, String run) {
    this.dataSource = dataSource;
    this.run = run;
  }

  /**
   * Creates the table if it is missing (shared by every run), in the database's own types: on
   * PostgreSQL {@code bigserial}, {@code text}, {@code bytea}; on MariaDB (the JDBC metadata's
   * product name) {@code AUTO_INCREMENT}, {@code varchar}, {@code longblob}. The counting queries
   * are the same on both.
   */
  public void createTable() throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      boolean mariaDb = c.getMetaData().getDatabaseProductName().equalsIgnoreCase("MariaDB");
      s.execute(mariaDb
          ? "CREATE TABLE IF NOT EXISTS " + TABLE + " (id bigint AUTO_INCREMENT PRIMARY KEY,"
              + " run_id varchar(64) NOT NULL, idem_key varchar(600) NOT NULL, payload longblob NOT NULL)"
          : "CREATE TABLE IF NOT EXISTS " + TABLE + " (id bigserial PRIMARY KEY, run_id text NOT NULL,"
              + " idem_key text NOT NULL, payload bytea NOT NULL)");
    }
  }

  /** Writes one effect row in the handler's transaction. */
  public void record(SqlSession session, String key, byte[] payload) throws SQLException {
    try (PreparedStatement ps =
        session.getConnection().prepareStatement(
            "INSERT INTO " + TABLE + " (run_id, idem_key, payload) VALUES (?, ?, ?)")) {
      ps.setString(1, run);
      ps.setString(2, key);
      ps.setBytes(3, payload);
      ps.executeUpdate();
    }
  }

  /** Committed effect rows for {@code key}, read on a separate connection. */
  public int count(String key) {
    return query("SELECT count(*) FROM " + TABLE + " WHERE run_id = ? AND idem_key = ?", key);
  }

  /** Committed effect rows of this run. */
  public int total() {
    return query("SELECT count(*) FROM " + TABLE + " WHERE run_id = ? AND ? IS NOT NULL", "");
  }

  /** Keys with more than one effect row. */
  public int doubled() {
    return query(
        "SELECT count(*) FROM (SELECT idem_key FROM " + TABLE + " WHERE run_id = ? AND ? IS NOT NULL"
            + " GROUP BY idem_key HAVING count(*) > 1) d",
        "");
  }

  private int query(String sql, String key) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, run);
      ps.setString(2, key);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    } catch (SQLException e) {
      throw new IllegalStateException("could not count effects: " + e.getMessage(), e);
    }
  }
}
