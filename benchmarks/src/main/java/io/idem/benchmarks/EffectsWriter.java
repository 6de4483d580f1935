package io.idem.benchmarks;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The plain consumers' database side, no dedup: one connection of the run's pool (auto-commit
 * off) and two reused prepared statements. {@link #applyOne} is a transaction of one effect
 * ({@code INSERT; COMMIT}: 2 round trips, one WAL flush), {@link #applyAll} one transaction of
 * many ({@code INSERT … SELECT unnest(?); COMMIT}; on MariaDB {@code INSERT … VALUES (?), (?), …;
 * COMMIT}). Not thread-safe: one consumer thread.
 */
final class EffectsWriter implements AutoCloseable {
  private final Connection connection;
  private final PreparedStatement one;
  private final @Nullable PreparedStatement many;
  private final boolean mariaDb;
  /** MariaDB: the multi-row INSERT of the last batch size (reused while the size repeats). */
  private @Nullable PreparedStatement rows;
  private int rowsSize;

  EffectsWriter(BenchDatabase db) throws SQLException {
    this.connection = db.dataSource.getConnection();
    connection.setAutoCommit(false);
    this.mariaDb = db.mariaDb;
    this.one = connection.prepareStatement("INSERT INTO effects (order_id) VALUES (?)");
    this.many = mariaDb ? null : connection.prepareStatement(BenchDatabase.insertAll(BenchDatabase.EFFECTS, -1));
  }

  /** One transaction: this order's effect. */
  void applyOne(String orderId) throws SQLException {
    one.setString(1, orderId);
    one.executeUpdate();
    connection.commit();
  }

  /** One transaction: every order's effect, one statement. */
  void applyAll(List<String> orderIds) throws SQLException {
    PreparedStatement statement = many;
    if (mariaDb) {
      if (rows == null || rowsSize != orderIds.size()) {
        if (rows != null) {
          rows.close();
        }
        rows = connection.prepareStatement(BenchDatabase.insertAll(BenchDatabase.EFFECTS, orderIds.size()));
        rowsSize = orderIds.size();
      }
      statement = rows;
    }
    BenchDatabase.bindAll(connection, statement, orderIds, mariaDb);
    statement.executeUpdate();
    connection.commit();
  }

  @Override
  public void close() throws SQLException {
    try {
      one.close();
      if (many != null) {
        many.close();
      }
      if (rows != null) {
        rows.close();
      }
    } finally {
      connection.close();
    }
  }
}
