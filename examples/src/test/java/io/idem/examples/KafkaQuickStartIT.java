package io.idem.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.fixtures.KafkaFixture;
import io.idem.fixtures.PostgresFixture;
import io.idem.kafka.KafkaIdempotentConsumer;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.UUID;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;

/** {@link KafkaQuickStart} as the README shows it, end to end on real Kafka and PostgreSQL. */
class KafkaQuickStartIT {

  @Test
  void threeEventsWithOneDuplicateChargeTwoOrders() throws Exception {
    String topic = "orders-" + UUID.randomUUID().toString().substring(0, 8);
    KafkaFixture kafka = KafkaFixture.shared();
    kafka.createTopic(topic, 1);
    try (HikariDataSource dataSource = PostgresFixture.shared().newSchema("examples_kafka")) {
      try (KafkaIdempotentConsumer consumer = KafkaQuickStart.start(kafka.bootstrapServers(), topic, dataSource)) {
        publish(kafka.bootstrapServers(), topic, "order-1", "order-1", "order-2"); // order-1 is a producer retry
        // all three settled: offset 3 committed by the "billing" group after the transactions
        TopicPartition partition = new TopicPartition(topic, 0);
        await().atMost(Duration.ofSeconds(30)) // ~2 s; the margin is for a loaded machine
            .until(() -> committed(kafka, partition) == 3);
      }
      assertThat(chargesPerOrder(dataSource)).isEqualTo(Map.of("order-1", 1, "order-2", 1)); // 2 effects
      dropSchema(dataSource);
    } finally {
      kafka.deleteTopic(topic);
    }
  }

  private static void publish(String bootstrapServers, String topic, String... keys) throws Exception {
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
    props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
    props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
      for (String key : keys) {
        var record = new ProducerRecord<byte[], byte[]>(
            topic, ("{\"order\":\"" + key + "\"}").getBytes(StandardCharsets.UTF_8));
        record.headers().add("idempotency-key", key.getBytes(StandardCharsets.UTF_8));
        producer.send(record).get();
      }
    }
  }

  private static long committed(KafkaFixture kafka, TopicPartition partition) throws Exception {
    Map<TopicPartition, OffsetAndMetadata> offsets =
        kafka.admin().listConsumerGroupOffsets("billing").partitionsToOffsetAndMetadata().get();
    OffsetAndMetadata offset = offsets.get(partition);
    return offset == null ? -1 : offset.offset();
  }

  /** How many times each order was charged. */
  private static Map<String, Integer> chargesPerOrder(HikariDataSource dataSource) throws Exception {
    Map<String, Integer> charges = new TreeMap<>();
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT order_id, count(*) FROM payments GROUP BY order_id")) {
      while (rs.next()) {
        charges.put(rs.getString(1), rs.getInt(2));
      }
    }
    return charges;
  }

  private static void dropSchema(HikariDataSource dataSource) throws Exception {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("DROP SCHEMA " + dataSource.getSchema() + " CASCADE");
    }
  }
}
