package io.idem.demo;

import io.idem.BrokerConsumer;
import io.idem.IdempotentConsumer;
import io.idem.fixtures.KafkaFixture;
import io.idem.kafka.KafkaConsumerConfig;
import io.idem.kafka.KafkaIdempotentConsumer;
import io.idem.kafka.KafkaInboundMessage;
import io.idem.kafka.KafkaOutboxPublisher;
import io.idem.spi.OutboxPublisher;
import io.idem.testkit.DeadLetteredMessage;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.jspecify.annotations.Nullable;

/**
 * The demo on Kafka: an in-JVM KRaft broker (or {@code IDEM_KAFKA_BOOTSTRAP}), a 4-partition topic
 * keyed by order id, and its {@code .DLT} topic. The consumer uses static group membership
 * ({@code group.instance.id}), so a restarted consumer takes its partitions back at once instead of
 * waiting for the killed one's session to time out.
 */
final class KafkaDemoBroker implements DemoBroker {
  private static final int PARTITIONS = 4;
  private @Nullable String bootstrap;
  private @Nullable KafkaProducer<byte[], byte[]> producer;

  KafkaDemoBroker(Map<String, String> args) {
    this.bootstrap = args.get("kafka-bootstrap");
  }

  @Override
  public String name() {
    return "kafka";
  }

  @Override
  public int defaultMaxBatchSize() {
    return KafkaConsumerConfig.DEFAULT_MAX_BATCH_SIZE;
  }

  @Override
  public String start() {
    KafkaFixture kafka = KafkaFixture.shared();
    bootstrap = kafka.bootstrapServers();
    return "Kafka: " + kafka.origin();
  }

  @Override
  public void createDestination(String topic) {
    KafkaFixture.shared().createTopic(topic, PARTITIONS);
    KafkaFixture.shared().createTopic(topic + KafkaConsumerConfig.DEFAULT_DEAD_LETTER_SUFFIX, 1);
  }

  @Override
  public void publish(String topic, List<Outbound> messages) {
    if (producer == null) {
      Properties props = new Properties();
      props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
      props.put(ProducerConfig.ACKS_CONFIG, "all");
      props.put(ProducerConfig.LINGER_MS_CONFIG, 5);
      props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
      props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
      producer = new KafkaProducer<>(props);
    }
    List<Future<RecordMetadata>> sent = new ArrayList<>();
    for (Outbound m : messages) {
      // the Kafka key (partitioning) follows the business key, so copies of an event share a partition
      byte[] key = m.headers().get(Outbound.KEY_HEADER);
      ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(topic, key, m.payload());
      m.headers().forEach((name, value) -> record.headers().add(name, value));
      sent.add(producer.send(record));
    }
    try {
      for (Future<RecordMetadata> f : sent) {
        f.get(60, TimeUnit.SECONDS);
      }
    } catch (Exception e) {
      throw new IllegalStateException("publishing to " + topic + " failed: " + e.getMessage(), e);
    }
  }

  @Override
  public List<String> connectionArgs() {
    return List.of("--kafka-bootstrap=" + bootstrap);
  }

  @Override
  public BrokerConsumer consumer(String topic, IdempotentConsumer<?> pipeline) {
    return consumer(topic, pipeline, 1);
  }

  @Override
  public BrokerConsumer consumer(String topic, IdempotentConsumer<?> pipeline, int maxBatchSize) {
    return consumer(topic, pipeline, maxBatchSize, null);
  }

  /** With {@code crashes}: the adapter's consumer and dead-letter producer come from its factories. */
  @Override
  public BrokerConsumer consumer(String topic, IdempotentConsumer<?> pipeline, int maxBatchSize,
      @Nullable BrokerCallCrashes crashes) {
    KafkaConsumerConfig config = KafkaConsumerConfig.builder(bootstrap(), topic)
        .consumerProperty("group.instance.id", "idem-demo-consumer")
        .consumerProperty("session.timeout.ms", 10_000)
        .maxBatchSize(maxBatchSize)
        .build();
    return crashes == null
        ? KafkaIdempotentConsumer.create(config, pipeline)
        : KafkaIdempotentConsumer.create(config, pipeline, crashes.kafkaConsumers(),
            crashes.kafkaDeadLetterProducers(topic + KafkaConsumerConfig.DEFAULT_DEAD_LETTER_SUFFIX));
  }

  /**
   * One: a poll may return every record left, and offsets are committed at most every
   * commitInterval (100 ms by default), and on close.
   */
  @Override
  public long settlingCallsAtLeast(long messages, int maxBatchSize) {
    return Math.min(1, messages);
  }

  /** An idempotent producer with {@code acks=all}, as {@link KafkaOutboxPublisher} forces. */
  @Override
  public OutboxPublisher outboxPublisher() {
    return KafkaOutboxPublisher.create(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap()));
  }

  @Override
  public long pending(String topic, String group) {
    Admin admin = KafkaFixture.shared().admin();
    try {
      Map<TopicPartition, OffsetAndMetadata> committed =
          admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
      long lag = 0;
      for (Map.Entry<TopicPartition, Long> end : endOffsets(topic, PARTITIONS).entrySet()) {
        OffsetAndMetadata c = committed.get(end.getKey());
        lag += Math.max(0, end.getValue() - (c == null ? 0 : c.offset()));
      }
      return lag;
    } catch (Exception e) {
      throw new IllegalStateException("could not read the lag of " + group + ": " + e.getMessage(), e);
    }
  }

  @Override
  public long deadLettered(String topic) {
    return endOffsets(topic + KafkaConsumerConfig.DEFAULT_DEAD_LETTER_SUFFIX, 1).values().stream()
        .mapToLong(Long::longValue).sum();
  }

  @Override
  public List<DeadLetteredMessage> readDeadLetters(String topic) {
    String deadLetterTopic = topic + KafkaConsumerConfig.DEFAULT_DEAD_LETTER_SUFFIX;
    Map<TopicPartition, Long> ends = endOffsets(deadLetterTopic, 1);
    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
    props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
    List<DeadLetteredMessage> out = new ArrayList<>();
    // no group: assigned and read from the start, nothing committed
    try (KafkaConsumer<byte[], byte[]> reader = new KafkaConsumer<>(props)) {
      List<TopicPartition> partitions = List.copyOf(ends.keySet());
      reader.assign(partitions);
      reader.seekToBeginning(partitions);
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (partitions.stream().anyMatch(tp -> reader.position(tp) < ends.getOrDefault(tp, 0L))) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("could not read " + deadLetterTopic + " up to " + ends + " within 60 s");
        }
        for (ConsumerRecord<byte[], byte[]> record : reader.poll(Duration.ofMillis(500))) {
          KafkaInboundMessage read = KafkaInboundMessage.of(record, 1, Instant.now());
          out.add(new DeadLetteredMessage(read.headers(), read.payload()));
        }
      }
    }
    return out;
  }

  private static Map<TopicPartition, Long> endOffsets(String topic, int partitions) {
    Map<TopicPartition, OffsetSpec> request = new HashMap<>();
    for (int p = 0; p < partitions; p++) {
      request.put(new TopicPartition(topic, p), OffsetSpec.latest());
    }
    try {
      Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> result =
          KafkaFixture.shared().admin().listOffsets(request).all().get(30, TimeUnit.SECONDS);
      Map<TopicPartition, Long> out = new HashMap<>();
      result.forEach((tp, info) -> out.put(tp, info.offset()));
      return out;
    } catch (Exception e) {
      throw new IllegalStateException("could not list the end offsets of " + topic + ": " + e.getMessage(), e);
    }
  }

  @Override
  public void deleteDestination(String topic) {
    KafkaFixture.shared().deleteTopic(topic);
    KafkaFixture.shared().deleteTopic(topic + KafkaConsumerConfig.DEFAULT_DEAD_LETTER_SUFFIX);
  }

  @Override
  public void close() {
    if (producer != null) {
      producer.close();
    }
  }

  private String bootstrap() {
    if (bootstrap == null) {
      throw new IllegalStateException("start() first: no Kafka bootstrap servers yet");
    }
    return bootstrap;
  }
}
