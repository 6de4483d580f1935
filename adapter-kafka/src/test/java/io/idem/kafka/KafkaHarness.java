package io.idem.kafka;

import io.idem.BrokerConsumer;
import io.idem.IdempotentConsumer;
import io.idem.testkit.BrokerHarness;
import io.idem.testkit.DeadLetteredMessage;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * The compatibility kit's view of one Kafka topic: {@value #PARTITIONS} partitions written round
 * robin (so copies of one key land on different partitions and two consumers race on them), and
 * its {@code .DLT} topic.
 */
final class KafkaHarness implements BrokerHarness {
  static final int PARTITIONS = 3;

  private final String topic;
  private final String deadLetterTopic;
  private final KafkaProducer<byte[], byte[]> producer = KafkaTestClients.producer();
  private final AtomicInteger next = new AtomicInteger();
  private final Map<String, Object> consumerProperties;
  private final OptionalInt maxBatchSize;
  private volatile String group = "";

  KafkaHarness(String name) {
    this(name, Map.of(), OptionalInt.empty());
  }

  /**
   * A harness whose consumers get {@code consumerProperties} (e.g. {@code group.protocol}) and
   * {@code maxBatchSize} (empty: the builder's default, batch mode).
   */
  KafkaHarness(String name, Map<String, Object> consumerProperties, OptionalInt maxBatchSize) {
    this.consumerProperties = Map.copyOf(consumerProperties);
    this.maxBatchSize = maxBatchSize;
    this.topic = name;
    this.deadLetterTopic = name + KafkaConsumerConfig.DEFAULT_DEAD_LETTER_SUFFIX;
    KafkaTestClients.kafka().createTopic(topic, PARTITIONS);
    KafkaTestClients.kafka().createTopic(deadLetterTopic, 1);
  }

  @Override
  public String destination() {
    return topic;
  }

  @Override
  public void publish(Map<String, String> headers, byte[] payload) {
    RecordHeaders kafkaHeaders = new RecordHeaders();
    headers.forEach((name, value) -> kafkaHeaders.add(name, value.getBytes(StandardCharsets.UTF_8)));
    int partition = Math.floorMod(next.getAndIncrement(), PARTITIONS);
    KafkaTestClients.send(producer, new ProducerRecord<byte[], byte[]>(topic, partition, (byte[]) null, payload, kafkaHeaders));
  }

  @Override
  public <C> BrokerConsumer newConsumer(IdempotentConsumer<C> pipeline) {
    group = pipeline.consumerGroup();
    KafkaConsumerConfig.Builder config = KafkaConsumerConfig.builder(KafkaTestClients.bootstrap(), topic)
        .consumerProperties(consumerProperties);
    maxBatchSize.ifPresent(config::maxBatchSize);
    return KafkaIdempotentConsumer.create(config.build(), pipeline);
  }

  @Override
  public List<DeadLetteredMessage> deadLetters() {
    return KafkaTestClients.readAll(deadLetterTopic).stream().map(KafkaHarness::toDeadLetter).toList();
  }

  private static DeadLetteredMessage toDeadLetter(ConsumerRecord<byte[], byte[]> record) {
    Map<String, String> headers = new LinkedHashMap<>();
    for (Header header : record.headers()) {
      headers.put(header.key(), header.value() == null ? "" : new String(header.value(), StandardCharsets.UTF_8));
    }
    return new DeadLetteredMessage(headers, record.value() == null ? new byte[0] : record.value());
  }

  @Override
  public void useConsumerGroup(String group) {
    this.group = group;
  }

  @Override
  public long pendingCount() {
    return KafkaTestClients.lag(group, topic);
  }

  @Override
  public void close() {
    producer.close();
    KafkaTestClients.kafka().deleteTopic(topic);
    KafkaTestClients.kafka().deleteTopic(deadLetterTopic);
  }
}
