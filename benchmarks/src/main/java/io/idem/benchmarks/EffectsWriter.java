package io.idem.benchmarks;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.List;

/**
 * The plain consumers' database side, no dedup: one connection of the run's pool (auto-commit
 * off) and two reused prepared statements. {@link #applyOne} is a transaction of one effect
 * ({@code INSERT; COMMIT}: 2 round trips, one WAL flush), {@link #applyAll} one transaction of
 * many ({@code INSERT … SELECT unnest(?); COMMIT}). Not thread-safe: one consumer thread.
 */
final class EffectsWriter implements AutoCloseable {
  private final Connection connection;
  private final PreparedStatement one;
  private final PreparedStatement many;

  EffectsWriter(BenchDatabase db) throws SQLException {
    this.connection = db.dataSource.getConnection();
    connection.setAutoCommit(false);
    this.one = connection.prepareStatement("INSERT INTO effects (order_id) VALUES (?)");
    this.many = connection.prepareStatement("INSERT INTO effects (order_id) SELECT unnest(?::text[])");
  }

  /** One transaction: this order's effect. */
  void applyOne(String orderId) throws SQLException {
    one.setString(1, orderId);
    one.executeUpdate();
    connection.commit();
  }

  /** One transaction: every order's effect, one statement. */
  void applyAll(List<String> orderIds) throws SQLException {
    many.setArray(1, connection.createArrayOf("text", orderIds.toArray()));
    many.executeUpdate();
    connection.commit();
  }

  @Override
  public void close() throws SQLException {
    try {
      one.close();
      many.close();
    } finally {
      connection.close();
    }
  }
}
