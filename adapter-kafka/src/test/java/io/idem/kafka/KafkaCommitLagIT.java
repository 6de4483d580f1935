package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.IdempotentConsumer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.ibatis.session.SqlSession;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Issue 23, case 5: the commit interval bounds the lag from a record's database commit to its
 * offset commit — the interval plus one record's (in batch mode one batch's) time plus the
 * {@code commitSync} round trip — under load, not once per poll after all of its records ran
 * (which, with 100 records of 20 ms each per poll, let the first record of a poll wait 2 s).
 *
 * <p>Measured on a real broker: every {@code commitSync} the adapter makes is timed (the
 * consumer's own method, wrapped), and so is the end of each record's handler; the bound is
 * derived from the configured interval and from the record, batch and commit times measured in
 * the same run, with a factor of 2 for a loaded machine — never a speed assertion.
 */
class KafkaCommitLagIT extends KafkaITSupport {
  private static final int RECORDS = 300;
  private static final int MAX_POLL_RECORDS = 100;
  private static final Duration RECORD_TIME = Duration.ofMillis(20);
  private static final Duration COMMIT_INTERVAL = Duration.ofMillis(100);

  private record Commit(long offset, long endNanos, long tookNanos) {}

  @ParameterizedTest(name = "maxBatchSize {0}, concurrency {1}")
  @CsvSource({"1, 1", "5, 1", "1, 2"})
  void everyOffsetIsCommittedWithinTheIntervalPlusOneRecordsOrBatchsTime(int maxBatchSize, int concurrency) {
    for (int i = 0; i < RECORDS; i++) {
      publish(0, "lag-" + i, "{}");
    }
    Map<Long, Long> handlerEndNanos = new ConcurrentHashMap<>();
    List<Commit> commits = new CopyOnWriteArrayList<>();
    TopicPartition partition = new TopicPartition(topic, 0);
    IdempotentConsumer<SqlSession> pipeline = pipeline((message, session) -> {
      Thread.sleep(RECORD_TIME.toMillis());
      TestEffects.record(session, keyOf(message), message.payload());
      handlerEndNanos.put(((KafkaInboundMessage) message).offset(), System.nanoTime());
    });
    KafkaConsumerConfig config = KafkaConsumerConfig.builder(KafkaTestClients.bootstrap(), topic)
        .maxPollRecords(MAX_POLL_RECORDS)
        .maxBatchSize(maxBatchSize)
        .concurrency(concurrency)
        .commitInterval(COMMIT_INTERVAL)
        .build();
    KafkaIdempotentConsumer consumer = KafkaIdempotentConsumer.create(config, pipeline,
        props -> new KafkaConsumer<byte[], byte[]>(props) {
          @Override
          public void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets) {
            long start = System.nanoTime();
            super.commitSync(offsets);
            recordCommit(offsets, start);
          }

          @Override
          public void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets, Duration timeout) {
            long start = System.nanoTime();
            super.commitSync(offsets, timeout);
            recordCommit(offsets, start);
          }

          private void recordCommit(Map<TopicPartition, OffsetAndMetadata> offsets, long start) {
            OffsetAndMetadata offset = offsets.get(partition);
            if (offset != null) {
              long end = System.nanoTime();
              commits.add(new Commit(offset.offset(), end, end - start));
            }
          }
        },
        KafkaProducer::new);
    try {
      consumer.start();
      await("every record committed").atMost(TIMEOUT).until(() -> committed(0) == RECORDS);
    } finally {
      consumer.close();
    }
    assertThat(effects.total()).isEqualTo(RECORDS);

    // what this run measured: the longest gap between two handler ends (a record's time, with its
    // transaction), and the longest commitSync
    long maxGap = 0;
    for (long offset = 1; offset < RECORDS; offset++) {
      maxGap = Math.max(maxGap, handlerEndNanos.get(offset) - handlerEndNanos.get(offset - 1));
    }
    long maxCommit = commits.stream().mapToLong(Commit::tookNanos).max().orElseThrow();
    // a record waits for the rest of its batch, then at most the interval plus the next batch
    long bound = 2 * (COMMIT_INTERVAL.toNanos() + 2L * maxBatchSize * maxGap + maxCommit);

    List<Long> lags = new ArrayList<>();
    for (long offset = 0; offset < RECORDS; offset++) {
      long settled = handlerEndNanos.get(offset);
      long o = offset;
      long committedAt = commits.stream().filter(c -> c.offset() > o && c.endNanos() >= settled)
          .mapToLong(Commit::endNanos).min()
          .orElseThrow(() -> new AssertionError("offset " + o + " never committed after its handler ended"));
      lags.add(committedAt - settled);
    }
    List<Long> sorted = lags.stream().sorted().toList();
    System.out.printf("commit lag (maxBatchSize %d, concurrency %d): p50 %d ms, p99 %d ms, max %d ms;"
            + " bound %d ms (longest record gap %d ms, longest commitSync %d ms), %d commits%n",
        maxBatchSize, concurrency, sorted.get(RECORDS / 2) / 1_000_000, sorted.get(RECORDS * 99 / 100) / 1_000_000,
        sorted.get(RECORDS - 1) / 1_000_000, bound / 1_000_000, maxGap / 1_000_000, maxCommit / 1_000_000,
        commits.size());
    for (int offset = 0; offset < RECORDS; offset++) {
      assertThat(lags.get(offset)).as("commit lag of offset %d, in ns (bound %d ms)", offset, bound / 1_000_000)
          .isLessThanOrEqualTo(bound);
    }
  }
}
