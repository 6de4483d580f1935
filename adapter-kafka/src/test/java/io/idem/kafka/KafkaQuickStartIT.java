package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.IdempotentConsumer;
import io.idem.fixtures.KafkaFixture;
import io.idem.fixtures.PostgresFixture;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.ibatis.annotations.Insert;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.Test;

/** A quick start like examples' KafkaQuickStart, run against real Kafka and PostgreSQL. */
class KafkaQuickStartIT {

  /** The application's MyBatis mapper (part of its own set-up, not of the quick start). */
  public interface Payments {
    @Insert("INSERT INTO payments (order_id) VALUES (#{orderId})")
    void charge(String orderId);
  }

  @Test
  void theReadmeQuickStartConsumesEachOrderOnce() throws Exception {
    // ---- the application's own set-up: a MyBatis SqlSessionFactory and the orders topic ----
    HikariDataSource dataSource = PostgresFixture.shared().newSchema("kafka_quick");
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE payments (order_id text NOT NULL)"); // no unique constraint
    }
    Configuration mybatis = new Configuration(new Environment("app", new JdbcTransactionFactory(), dataSource));
    mybatis.addMapper(Payments.class);
    SqlSessionFactory sqlSessionFactory = new SqlSessionFactoryBuilder().build(mybatis);
    String bootstrapServers = KafkaFixture.shared().bootstrapServers();
    KafkaFixture.shared().createTopic("orders", 1);
    try (KafkaProducer<byte[], byte[]> producer = KafkaTestClients.producer()) {
      for (String order : List.of("order-1", "order-1", "order-2")) { // order-1 delivered twice
        RecordHeaders headers = new RecordHeaders();
        headers.add("idempotency-key", order.getBytes(StandardCharsets.UTF_8));
        KafkaTestClients.send(producer, new ProducerRecord<byte[], byte[]>("orders", null, (byte[]) null,
            ("{\"order\":\"" + order + "\"}").getBytes(StandardCharsets.UTF_8), headers));
      }
    }

    // ---- README quick start: begin ----
    // the pipeline: the dedup marker and the business write commit in one PostgreSQL transaction
    var store = MyBatisProcessedEventStore.builder(sqlSessionFactory).createTableIfMissing(true).build();
    IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(store)
        .consumerGroup("billing")
        .handler((message, session) ->
            session.getMapper(Payments.class).charge(message.header("idempotency-key")))
        .build();
    // the Kafka consumer: each offset is committed only after that transaction committed
    KafkaConsumerConfig config = KafkaConsumerConfig.builder(bootstrapServers, "orders").build();
    try (KafkaIdempotentConsumer consumer = KafkaIdempotentConsumer.create(config, pipeline)) {
      consumer.start();
      // ---- README quick start: end ----
      await().atMost(Duration.ofSeconds(60))
          .until(() -> payments(dataSource).size() >= 2 && KafkaTestClients.lag("billing", "orders") == 0);
    }

    assertThat(payments(dataSource)).containsExactlyInAnyOrder("order-1", "order-2");
    dataSource.close();
  }

  private static List<String> payments(HikariDataSource dataSource) throws Exception {
    List<String> out = new ArrayList<>();
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT order_id FROM payments")) {
      while (rs.next()) {
        out.add(rs.getString(1));
      }
    }
    return out;
  }
}
