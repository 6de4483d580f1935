package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Offsets are committed once per poll ({@code commitInterval} zero) or at most once per interval
 * (the default 100 ms, checked after each record), never once per record: a real {@code KafkaConsumer} whose commits are counted works through records already on
 * the topic, a poll's worth at a time, in per-message and in batch mode.
 */
class OffsetsAreCommittedPerPollNotPerRecordIT extends KafkaITSupport {
  private static final int RECORDS = 200;
  private static final int MAX_POLL_RECORDS = 50;

  @ParameterizedTest(name = "maxBatchSize {0}, commitInterval {1} ms")
  @CsvSource({"1, 0", "50, 0", "1, -1"})
  void aPollsRecordsShareOneCommit(int maxBatchSize, long commitIntervalMillis) {
    for (int i = 0; i < RECORDS; i++) {
      publish(0, "c-" + i, "{}");
    }
    List<Map<TopicPartition, OffsetAndMetadata>> commits = new CopyOnWriteArrayList<>();
    List<Long> commitStarts = new CopyOnWriteArrayList<>();
    KafkaConsumerConfig config = KafkaConsumerConfig.builder(KafkaTestClients.bootstrap(), topic)
        .maxPollRecords(MAX_POLL_RECORDS)
        .maxBatchSize(maxBatchSize)
        .commitInterval(commitIntervalMillis < 0
            ? KafkaConsumerConfig.DEFAULT_COMMIT_INTERVAL : Duration.ofMillis(commitIntervalMillis))
        .build();
    KafkaIdempotentConsumer consumer = KafkaIdempotentConsumer.create(config, pipeline(recording()),
        props -> new KafkaConsumer<byte[], byte[]>(props) {
          @Override
          public void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets) {
            if (!handover(offsets)) {
              commitStarts.add(System.nanoTime());
            }
            super.commitSync(offsets);
            commits.add(Map.copyOf(offsets));
          }

          @Override
          public void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets, Duration timeout) {
            if (!handover(offsets)) {
              commitStarts.add(System.nanoTime());
            }
            super.commitSync(offsets, timeout);
            commits.add(Map.copyOf(offsets));
          }
        },
        KafkaProducer::new);
    try {
      consumer.start();
      await("every record committed").atMost(TIMEOUT).until(() -> committed(0) == RECORDS);
      assertThat(effects.total()).isEqualTo(RECORDS);
    } finally {
      consumer.close();
    }

    assertThat(commits.get(commits.size() - 1).get(new TopicPartition(topic, 0)).offset()).isEqualTo(RECORDS);
    if (commitIntervalMillis == 0) {
      // one commit per poll (a poll returns up to MAX_POLL_RECORDS; 4 polls when every fetch is
      // full), far from one per record (200)
      assertThat(commits).isNotEmpty().hasSizeLessThanOrEqualTo(RECORDS / 10);
    } else {
      // with an interval, checked after each record: two commits are never closer than the interval
      long interval = KafkaConsumerConfig.DEFAULT_COMMIT_INTERVAL.toNanos();
      for (int i = 1; i < commitStarts.size(); i++) {
        assertThat(commitStarts.get(i) - commitStarts.get(i - 1)).as("gap before commit %d, ns", i)
            .isGreaterThanOrEqualTo(interval);
      }
      assertThat(commits).hasSizeLessThan(RECORDS);
    }
  }

  /**
   * The adapter's handover marks (at assignment {@link ConsumerLoop#OWNED}, at a clean close {@link
   * ConsumerLoop#CLEAN}) move no offset forward; the interval is about the commits that do.
   */
  private static boolean handover(Map<TopicPartition, OffsetAndMetadata> offsets) {
    return offsets.values().stream().allMatch(offset -> ConsumerLoop.OWNED.equals(offset.metadata())
        || ConsumerLoop.CLEAN.equals(offset.metadata()));
  }
}
