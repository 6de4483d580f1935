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

  /** Writes one effect row per message with one multi-row INSERT, inside the handler's transaction. */
  static void recordAll(SqlSession session, java.util.List<io.idem.KeyedMessage> messages) throws SQLException {
    String values = String.join(", ", java.util.Collections.nCopies(messages.size(), "(?, ?)"));
    try (PreparedStatement ps = session.getConnection()
        .prepareStatement("INSERT INTO " + TABLE + " (idem_key, payload) VALUES " + values)) {
      int i = 1;
      for (io.idem.KeyedMessage m : messages) {
        ps.setString(i++, m.key().value());
        ps.setBytes(i++, m.message().payload());
      }
      ps.executeUpdate();
    }
  }

  /** The keys of the effect rows in the order they were written (by their bigserial id). */
  java.util.List<String> keysInOrder() {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT idem_key FROM " + TABLE + " ORDER BY id")) {
      java.util.List<String> keys = new java.util.ArrayList<>();
      while (rs.next()) {
        keys.add(rs.getString(1));
      }
      return keys;
    } catch (SQLException e) {
      throw new IllegalStateException("could not read effects: " + e.getMessage(), e);
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
