package io.idem.kafka;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;
import org.apache.ibatis.session.SqlSession;

/**
 * A business table written by test handlers through the pipeline's {@link SqlSession}, so each
 * write commits or rolls back with the processed-events marker. No unique constraint on purpose:
 * an effect applied twice shows up as two rows.
 */
final class TestEffects {
  static final String TABLE = "kafka_effects";

  private final DataSource dataSource;

  TestEffects(DataSource dataSource) {
    this.dataSource = dataSource;
  }

  void createTable() throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE IF NOT EXISTS " + TABLE
          + " (id bigserial PRIMARY KEY, idem_key text NOT NULL, payload bytea NOT NULL)");
    }
  }

  /** Writes one effect row inside the handler's transaction. */
  static void record(SqlSession session, String key, byte[] payload) throws SQLException {
    try (PreparedStatement ps = session.getConnection()
        .prepareStatement("INSERT INTO " + TABLE + " (idem_key, payload) VALUES (?, ?)")) {
      ps.setString(1, key);
      ps.setBytes(2, payload);
      ps.executeUpdate();
    }
  }

  int count(String key) {
    return query("SELECT count(*) FROM " + TABLE + " WHERE idem_key = ?", key);
  }

  int total() {
    return query("SELECT count(*) FROM " + TABLE + " WHERE ? IS NOT NULL", "");
  }

  int distinctKeys() {
    return query("SELECT count(DISTINCT idem_key) FROM " + TABLE + " WHERE ? IS NOT NULL", "");
  }

  /** Keys with more than one effect row. */
  int doubled() {
    return query("SELECT count(*) FROM (SELECT idem_key FROM " + TABLE + " WHERE ? IS NOT NULL"
        + " GROUP BY idem_key HAVING count(*) > 1) d", "");
  }

  private int query(String sql, String parameter) {
    try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, parameter);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    } catch (SQLException e) {
      throw new IllegalStateException("could not count effects: " + e.getMessage(), e);
    }
  }
}
