package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.MessageHandler;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.ibatis.session.SqlSession;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Which records the adapter flags as unaccounted redeliveries (docs/BROKERS.md, Kafka "Process
 * deaths"): none on a group's first start or after a clean close (offset metadata {@code
 * idem:clean}), so the happy path pays nothing; after a consumer an {@code Error} stopped, the
 * records from the committed offset on until one is applied fresh, and {@code maxBatchSize - 1}
 * more — never the records after them.
 */
class KafkaRedeliveryWindowIT extends KafkaITSupport {
  private final Map<String, Boolean> flags = new ConcurrentHashMap<>();

  @Override
  protected int partitions() {
    return 1;
  }

  @Test
  void aFirstStartAndAStartAfterACleanCloseFlagNothing() {
    List.of("a-1", "a-2", "a-3").forEach(key -> publish(0, key, "{}"));
    KafkaIdempotentConsumer first = start(flagging(recording(), null), b -> b);
    await("applied").atMost(TIMEOUT).until(() -> effects.total() == 3);
    awaitSettled();
    first.close();
    assertThat(committedMetadata()).as("a clean close").isEqualTo(ConsumerLoop.CLEAN);

    List.of("a-4", "a-5").forEach(key -> publish(0, key, "{}"));
    start(flagging(recording(), null), b -> b);
    await("applied after the restart").atMost(TIMEOUT).until(() -> effects.total() == 5);
    awaitSettled();
    assertThat(flags).hasSize(5).doesNotContainValue(true);
  }

  @Test
  void aRebalanceHandsThePartitionOverCleanly() {
    List.of("r-1", "r-2").forEach(key -> publish(0, key, "{}"));
    start(flagging(recording(), null), b -> b);
    await("applied").atMost(TIMEOUT).until(() -> effects.total() == 2);
    awaitSettled();
    start(flagging(recording(), null), b -> b); // joins: the partition is revoked, then assigned
    await("revoked cleanly, then marked by its new owner").atMost(TIMEOUT)
        .until(() -> ConsumerLoop.OWNED.equals(committedMetadata()));

    List.of("r-3", "r-4").forEach(key -> publish(0, key, "{}"));
    await("applied after the rebalance").atMost(TIMEOUT).until(() -> effects.total() == 4);
    awaitSettled();
    assertThat(flags).hasSize(4).doesNotContainValue(true);
  }

  /** @param batch the consumer's maxBatchSize: the window covers the batch - 1 records after the first applied */
  @ParameterizedTest(name = "maxBatchSize {0}")
  @ValueSource(ints = {1, 3})
  void afterAConsumerAnErrorStoppedTheWindowEndsPastTheFirstRecordAppliedFresh(int batch) {
    List<String> keys = List.of("g-1", "g-2", "oom", "g-3", "g-4", "g-5", "g-6");
    keys.forEach(key -> publish(0, key, "{}"));
    AtomicBoolean failing = new AtomicBoolean(true);
    KafkaIdempotentConsumer first = start(flagging(recording(), failing), b -> b.maxBatchSize(batch));
    await("stopped by the Error").atMost(TIMEOUT).until(() -> first.failure().isPresent());
    first.close();
    assertThat(effects.count("oom")).isZero();
    assertThat(committedMetadata()).as("not a clean handover").isNotEqualTo(ConsumerLoop.CLEAN);
    long committed = committed(0);
    failing.set(false);
    flags.clear();

    start(flagging(recording(), failing), b -> b.maxBatchSize(batch));
    await("applied after the restart").atMost(TIMEOUT).until(() -> effects.total() == keys.size());
    awaitSettled();
    // the records before the committed offset are not fetched again (the stopped consumer
    // committed what it applied); the first record from it on is applied fresh here ("oom", or
    // the first of the batch it failed in), so it and the batch - 1 after it are flagged
    assertThat(committed).isBetween(0L, (long) keys.indexOf("oom"));
    for (int i = (int) committed; i < keys.size(); i++) {
      String key = keys.get(i);
      assertThat(flags.get(key)).as("flag of " + key).isEqualTo(i < committed + batch);
    }
    for (String key : keys) {
      assertThat(effects.count(key)).as("effects of " + key).isEqualTo(1);
    }
  }

  /** Records whether each record was flagged; "oom" throws an OutOfMemoryError while {@code failing}. */
  private MessageHandler<SqlSession> flagging(MessageHandler<SqlSession> handler, AtomicBoolean failing) {
    return (message, session) -> {
      flags.put(keyOf(message), message.unaccountedRedelivery());
      if (failing != null && failing.get() && keyOf(message).equals("oom")) {
        throw new OutOfMemoryError("simulated");
      }
      handler.handle(message, session);
    };
  }

  private String committedMetadata() throws IllegalStateException {
    try {
      Map<TopicPartition, OffsetAndMetadata> offsets = KafkaTestClients.admin()
          .listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
      OffsetAndMetadata offset = offsets.get(new TopicPartition(topic, 0));
      return offset == null ? null : offset.metadata();
    } catch (Exception e) {
      throw new IllegalStateException("could not read the committed offsets of " + group, e);
    }
  }
}
