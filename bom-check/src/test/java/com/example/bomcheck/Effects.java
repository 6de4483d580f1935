package com.example.bomcheck;

import io.idem.IdempotentConsumer;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.TreeMap;
import javax.sql.DataSource;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;

/** A user's pipeline: one row per applied key in {@code charges}, in the dedup transaction. */
final class Effects {
  private final DataSource dataSource;
  private final String consumerGroup;

  Effects(DataSource dataSource, String consumerGroup) throws SQLException {
    this.dataSource = dataSource;
    this.consumerGroup = consumerGroup;
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE charges (order_id text NOT NULL)"); // no unique constraint: a doubled effect shows
    }
  }

  IdempotentConsumer<SqlSession> pipeline() {
    var sessions = new SqlSessionFactoryBuilder().build(
        new Configuration(new Environment("app", new JdbcTransactionFactory(), dataSource)));
    var store = MyBatisProcessedEventStore.builder(sessions).createTableIfMissing(true).build();
    return IdempotentConsumer.builder(store)
        .consumerGroup(consumerGroup)
        .handler((key, message, session) -> {
          try (var insert = session.getConnection().prepareStatement("INSERT INTO charges VALUES (?)")) {
            insert.setString(1, key.value());
            insert.executeUpdate();
          }
        })
        .build();
  }

  /** How many times each order was charged. */
  Map<String, Integer> charges() throws SQLException {
    Map<String, Integer> charges = new TreeMap<>();
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT order_id, count(*) FROM charges GROUP BY order_id")) {
      while (rs.next()) {
        charges.put(rs.getString(1), rs.getInt(2));
      }
    }
    return charges;
  }
}
