package io.idem.jms;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.IdempotentConsumer;
import io.idem.fixtures.ArtemisFixture;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import jakarta.jms.Connection;
import jakarta.jms.ConnectionFactory;
import jakarta.jms.MessageProducer;
import jakarta.jms.Session;
import jakarta.jms.TextMessage;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import javax.sql.DataSource;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.junit.jupiter.api.Test;

/**
 * A quick start like examples' JmsQuickStart, compiled and run as written (between the marker
 * comments): the same order sent twice is applied once.
 */
class JmsQuickStartIT {

  @Test
  void quickStart() throws Exception {
    ArtemisFixture artemis = ArtemisFixture.shared();
    artemis.deleteQueue("orders");
    artemis.deleteQueue("orders.dlq");
    artemis.createQueue("orders");
    artemis.createQueue("orders.dlq");
    ConnectionFactory connectionFactory = artemis.connectionFactory();
    DataSource dataSource = JmsTestDatabase.dataSource();
    try (java.sql.Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE orders_applied (order_key text NOT NULL)");
    }
    SqlSessionFactory sqlSessionFactory = JmsTestDatabase.sessions(dataSource);
    try (Connection connection = connectionFactory.createConnection()) {
      Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
      MessageProducer producer = session.createProducer(session.createQueue("orders"));

      // ---- quick start (README) -------------------------------------------------------------
      var store = MyBatisProcessedEventStore.builder(sqlSessionFactory).createTableIfMissing(true).build();
      IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(store)
          .consumerGroup("billing")
          .handler((message, tx) -> { // tx: the MyBatis SqlSession of the dedup transaction
            try (PreparedStatement insert = tx.getConnection()
                .prepareStatement("INSERT INTO orders_applied (order_key) VALUES (?)")) {
              insert.setString(1, message.header("idempotency-key"));
              insert.executeUpdate();
            }
          })
          .build();
      JmsIdempotentConsumer consumer = JmsIdempotentConsumer.create(
          JmsConsumerConfig.builder(connectionFactory, "orders", "orders.dlq").concurrency(4).build(),
          pipeline);
      consumer.start();
      // producers set the key in JMS property "idempotency_key" (JMS names cannot contain '-')
      TextMessage order = session.createTextMessage("{\"orderId\":42}");
      order.setStringProperty(JmsHeaderNames.DEFAULT_KEY_PROPERTY, "order-42");
      producer.send(order);
      producer.send(order); // sent twice, applied once
      // ---------------------------------------------------------------------------------------

      await().atMost(Duration.ofSeconds(30)).until(() -> artemis.messageCount("orders") == 0);
      consumer.close();
    } finally {
      artemis.deleteQueue("orders");
      artemis.deleteQueue("orders.dlq");
    }
    try (java.sql.Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*) FROM orders_applied WHERE order_key = 'order-42'")) {
      rs.next();
      assertThat(rs.getInt(1)).isEqualTo(1);
    }
  }
}
