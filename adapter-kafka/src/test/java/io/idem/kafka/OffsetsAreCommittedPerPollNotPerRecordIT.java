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
 * Offsets are committed once per poll ({@code commitInterval} zero) or less often (the default
 * 100 ms), never once per record: a real {@code KafkaConsumer} whose commits are counted works through records already on
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
            super.commitSync(offsets);
            commits.add(Map.copyOf(offsets));
          }

          @Override
          public void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets, Duration timeout) {
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

    // one commit per poll (a poll returns up to MAX_POLL_RECORDS; 4 polls when every fetch is
    // full), far from one per record (200), the last one covering all
    assertThat(commits).isNotEmpty().hasSizeLessThanOrEqualTo(RECORDS / 10);
    assertThat(commits.get(commits.size() - 1).get(new TopicPartition(topic, 0)).offset()).isEqualTo(RECORDS);
  }
}
