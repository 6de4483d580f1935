package io.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.IdempotentConsumer;
import io.idem.fixtures.PostgresFixture;
import io.idem.fixtures.RabbitFixture;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import javax.sql.DataSource;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;
import org.junit.jupiter.api.Test;

/** A quick start like examples' RabbitQuickStart, compiled and run: a duplicate is applied once. */
class RabbitQuickStartIT {

  @Test
  void quickStartAppliesADuplicateOnce() throws Exception {
    String queue = TestQueue.unique("quick-start");
    String amqpUri = RabbitFixture.shared().uri();
    try (HikariDataSource dataSource = PostgresFixture.shared().newSchema("rabbit_quick");
        TestQueue admin = TestQueue.undeclared(queue.substring("idem-test-".length()), RabbitQueueType.QUORUM)) {
      try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
        s.execute("CREATE TABLE orders (id text NOT NULL, body bytea NOT NULL)");
      }
      RabbitIdempotentConsumer consumer = quickStart(dataSource, amqpUri, admin.name);
      try (consumer) {
        admin.publish(Map.of("idempotency-key", "order-42"), "{\"total\":42}".getBytes());
        admin.publish(Map.of("idempotency-key", "order-42"), "{\"total\":42}".getBytes());
        admin.publish(Map.of("idempotency-key", "order-43"), "{\"total\":43}".getBytes());
        await().atMost(Duration.ofSeconds(30)).until(() -> rows(dataSource, "order-43") == 1);
        await().atMost(Duration.ofSeconds(30)).until(() -> admin.ready() == 0);
      }
      assertThat(rows(dataSource, "order-42")).isEqualTo(1);
    }
  }

  // ---- the README quick start (keep it at most 20 lines) ----
  static RabbitIdempotentConsumer quickStart(DataSource dataSource, String amqpUri, String queue) {
    SqlSessionFactory sessions = new SqlSessionFactoryBuilder().build(
        new Configuration(new Environment("app", new JdbcTransactionFactory(), dataSource)));
    IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer
        .builder(MyBatisProcessedEventStore.builder(sessions).createTableIfMissing(true).build())
        .consumerGroup("billing")
        .handler((message, session) -> {         // runs in the dedup transaction
          try (var insert = session.getConnection().prepareStatement("INSERT INTO orders VALUES (?, ?)")) {
            insert.setString(1, message.header("idempotency-key"));
            insert.setBytes(2, message.payload());
            insert.executeUpdate();
          }
        })
        .build();
    RabbitConsumerConfig config = RabbitConsumerConfig.builder(queue)   // e.g. "orders"
        .uri(amqpUri)                                                   // amqp://guest:guest@localhost:5672/%2F
        .queueType(RabbitQueueType.QUORUM).deliveryLimit(20)
        .declareTopology(true)            // queue + <queue>.dlx + <queue>.dlq, verified if they exist
        .build();
    RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(config, pipeline);
    consumer.start();                     // ack after commit; close() finishes in-flight work
    return consumer;
  }

  private static int rows(DataSource dataSource, String id) throws Exception {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM orders WHERE id = ?")) {
      ps.setString(1, id);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    }
  }
}
