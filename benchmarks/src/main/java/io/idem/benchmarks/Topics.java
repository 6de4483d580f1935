package io.idem.benchmarks;

import io.idem.kafka.KafkaConsumerConfig;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/** Topic chores of a run, through one Admin client per bootstrap address. */
final class Topics {
  private static final Map<String, Admin> ADMINS = new java.util.concurrent.ConcurrentHashMap<>();

  private Topics() {}

  private static Admin admin(String bootstrap) {
    return ADMINS.computeIfAbsent(bootstrap, b -> {
      Properties props = new Properties();
      props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, b);
      return Admin.create(props);
    });
  }

  /** Closes the Admin clients (before the in-JVM broker stops). */
  static void closeAll() {
    ADMINS.values().forEach(Admin::close);
    ADMINS.clear();
  }

  /** Creates {@code topic} with {@code partitions} partitions and its {@code .DLT} (1 partition). */
  static void create(String bootstrap, String topic, int partitions) throws Exception {
    admin(bootstrap).createTopics(List.of(new NewTopic(topic, partitions, (short) 1),
            new NewTopic(topic + KafkaConsumerConfig.DEFAULT_DEAD_LETTER_SUFFIX, 1, (short) 1)))
        .all().get(60, TimeUnit.SECONDS);
  }

  /** Deletes the topic, its {@code .DLT} and the consumer group named like it. */
  static void delete(String bootstrap, String topic) {
    try {
      admin(bootstrap).deleteConsumerGroups(List.of(topic)).all().get(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      // a group with a member still leaving cannot be deleted; the topic goes anyway
    }
    try {
      admin(bootstrap).deleteTopics(List.of(topic, topic + KafkaConsumerConfig.DEFAULT_DEAD_LETTER_SUFFIX))
          .all().get(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      System.err.println("could not delete topic " + topic + ": " + e);
    }
  }

  /** Records of {@code topic} not yet committed by {@code group} (every record counts when none is committed). */
  static long lag(String bootstrap, String topic, String group) throws ExecutionException, InterruptedException {
    Admin admin = admin(bootstrap);
    Map<TopicPartition, OffsetAndMetadata> committed =
        admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
    int partitions = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size();
    Map<TopicPartition, OffsetSpec> latest = java.util.stream.IntStream.range(0, partitions).boxed()
        .collect(Collectors.toMap(p -> new TopicPartition(topic, p), p -> OffsetSpec.latest()));
    Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> ends = admin.listOffsets(latest).all().get();
    long lag = 0;
    for (Map.Entry<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> e : ends.entrySet()) {
      OffsetAndMetadata c = committed.get(e.getKey());
      lag += e.getValue().offset() - (c == null ? 0 : c.offset());
    }
    return lag;
  }
}
