package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.idem.InboundMessage;
import io.idem.spi.OutboxPublisher;
import io.idem.testkit.OutboxPublisherCompatibilityKit;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.Test;

/** KafkaOutboxPublisher on the in-JVM (or configured) Kafka broker; a 3-partition topic. */
class KafkaOutboxPublisherIT extends OutboxPublisherCompatibilityKit {

  @Override
  protected OutboxPublisher newPublisher() {
    return KafkaOutboxPublisher.create(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, KafkaTestClients.bootstrap()));
  }

  @Override
  protected String newDestination(String name) {
    KafkaTestClients.kafka().createTopic(name, 3);
    return name;
  }

  @Override
  protected void deleteDestination(String destination) {
    KafkaTestClients.kafka().deleteTopic(destination);
  }

  @Override
  protected List<InboundMessage> receive(String topic, int count, Duration timeout) {
    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, KafkaTestClients.bootstrap());
    props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
    props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
    List<InboundMessage> received = new ArrayList<>();
    long deadline = System.nanoTime() + timeout.toNanos();
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
      List<TopicPartition> partitions = consumer.partitionsFor(topic).stream()
          .map(p -> new TopicPartition(topic, p.partition())).toList();
      consumer.assign(partitions); // no group join: quicker than subscribe
      consumer.seekToBeginning(partitions);
      while (received.size() < count && System.nanoTime() < deadline) {
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
          received.add(KafkaInboundMessage.of(r, 1, Instant.now()));
        }
      }
    }
    return received;
  }

  @Test
  void settingsThatWouldWeakenTheOutboxAreRefused() {
    assertThatThrownBy(() -> KafkaOutboxPublisher.create(Map.of("bootstrap.servers", "x:1", "acks", "1")))
        .hasMessage("acks must be all for the outbox, but was 1");
    assertThatThrownBy(() -> KafkaOutboxPublisher.create(Map.of("bootstrap.servers", "x:1", "enable.idempotence", "false")))
        .hasMessage("enable.idempotence must be true for the outbox, but was false");
  }
}
