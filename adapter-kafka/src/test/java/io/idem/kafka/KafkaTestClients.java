package io.idem.kafka;

import io.idem.fixtures.KafkaFixture;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
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
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/** Plain Kafka clients for the tests' own publishing and inspection (never the adapter's). */
final class KafkaTestClients {
  private KafkaTestClients() {}

  static KafkaFixture kafka() {
    return KafkaFixture.shared();
  }

  static String bootstrap() {
    return kafka().bootstrapServers();
  }

  static Admin admin() {
    return kafka().admin();
  }

  /** A unique topic name with the given prefix. */
  static String uniqueTopic(String prefix) {
    return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
  }

  static KafkaProducer<byte[], byte[]> producer() {
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
    props.put(ProducerConfig.ACKS_CONFIG, "all");
    props.put(ProducerConfig.LINGER_MS_CONFIG, 5);
    props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
    props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
    return new KafkaProducer<>(props);
  }

  /** Sends and waits for the broker's acknowledgement. */
  static void send(KafkaProducer<byte[], byte[]> producer, ProducerRecord<byte[], byte[]> record) {
    try {
      producer.send(record).get(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IllegalStateException("could not publish to " + record.topic() + ": " + e, e);
    }
  }

  /** Committed offsets of {@code group} on {@code topic}'s partitions (absent = none committed). */
  static Map<TopicPartition, Long> committed(String group, String topic) {
    try {
      Map<TopicPartition, OffsetAndMetadata> offsets =
          admin().listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
      return offsets.entrySet().stream()
          .filter(e -> e.getKey().topic().equals(topic) && e.getValue() != null)
          .collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().offset()));
    } catch (InterruptedException e) {
      // keep the flag: a sampling loop that catches the exception must still see it and stop
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted reading committed offsets of " + group, e);
    } catch (Exception e) {
      throw new IllegalStateException("could not read committed offsets of " + group + ": " + e, e);
    }
  }

  /** End offsets (latest) of every partition of {@code topic}. */
  static Map<TopicPartition, Long> endOffsets(String topic) {
    return offsets(topic, OffsetSpec.latest());
  }

  static Map<TopicPartition, Long> beginningOffsets(String topic) {
    return offsets(topic, OffsetSpec.earliest());
  }

  private static Map<TopicPartition, Long> offsets(String topic, OffsetSpec spec) {
    try {
      int partitions = admin().describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS)
          .get(topic).partitions().size();
      Map<TopicPartition, OffsetSpec> request = new java.util.HashMap<>();
      for (int p = 0; p < partitions; p++) {
        request.put(new TopicPartition(topic, p), spec);
      }
      Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> result =
          admin().listOffsets(request).all().get(30, TimeUnit.SECONDS);
      return result.entrySet().stream().collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().offset()));
    } catch (Exception e) {
      throw new IllegalStateException("could not list offsets of " + topic + ": " + e, e);
    }
  }

  /** Records on {@code topic} not covered by {@code group}'s committed offsets. */
  static long lag(String group, String topic) {
    Map<TopicPartition, Long> committed = committed(group, topic);
    Map<TopicPartition, Long> beginning = beginningOffsets(topic);
    long lag = 0;
    for (Map.Entry<TopicPartition, Long> end : endOffsets(topic).entrySet()) {
      long from = committed.getOrDefault(end.getKey(), beginning.getOrDefault(end.getKey(), 0L));
      lag += Math.max(0, end.getValue() - from);
    }
    return lag;
  }

  /** The consumer ids of {@code group}'s members, as the broker describes the group now. */
  static java.util.Set<String> members(String group) throws Exception {
    return admin().describeConsumerGroups(List.of(group)).describedGroups().get(group)
        .get(30, TimeUnit.SECONDS).members().stream()
        .map(org.apache.kafka.clients.admin.MemberDescription::consumerId).collect(Collectors.toSet());
  }

  /** Every record of {@code topic} from the beginning to the current end, ordered by timestamp. */
  static List<ConsumerRecord<byte[], byte[]>> readAll(String topic) {
    Map<TopicPartition, Long> end = endOffsets(topic);
    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
    props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
    List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
    try (KafkaConsumer<byte[], byte[]> reader = new KafkaConsumer<>(props)) {
      reader.assign(end.keySet());
      reader.seekToBeginning(end.keySet());
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (end.entrySet().stream().anyMatch(e -> reader.position(e.getKey()) < e.getValue())) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("could not read " + topic + " to its end " + end);
        }
        reader.poll(Duration.ofMillis(100)).forEach(out::add);
      }
    }
    out.sort(Comparator.comparingLong(ConsumerRecord<byte[], byte[]>::timestamp)
        .thenComparingInt(ConsumerRecord::partition)
        .thenComparingLong(ConsumerRecord::offset));
    return out;
  }
}
