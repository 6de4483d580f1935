package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.MessageHandler;
import io.idem.ProcessingOutcome;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.apache.ibatis.session.SqlSession;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/**
 * Batch mode's time budget ({@link BatchBudget}): with the default configuration (batches of up to
 * {@link KafkaConsumerConfig#DEFAULT_MAX_BATCH_SIZE}) and a handler so slow that a full batch
 * would outlast {@code max.poll.interval.ms}, each batch is cut to the time left in the poll's
 * budget (half the interval), so the consumer polls in time: it is never pushed out of its group
 * (no partition revoked or lost, the same member throughout), no record is delivered twice, and
 * every record's effect is written exactly once. Real broker, real PostgreSQL.
 */
class SlowHandlerInBatchModeKeepsTheConsumerInItsGroupIT extends KafkaITSupport {
  private static final Duration MAX_POLL_INTERVAL = Duration.ofSeconds(6);
  private static final Duration HANDLER = Duration.ofMillis(100);
  private static final int RECORDS = KafkaConsumerConfig.DEFAULT_MAX_POLL_RECORDS;

  /** One handler call: its key, its database transaction, when it started and ended. */
  record Call(String key, long txid, long startNanos, long endNanos) {}

  @Test
  void batchesAreCutToThePollBudgetSoTheMemberStaysAndNothingIsDoubledOrMissing() throws Exception {
    // without the budget one poll's batch would take longer than max.poll.interval.ms
    assertThat(HANDLER.multipliedBy(KafkaConsumerConfig.DEFAULT_MAX_BATCH_SIZE)).isGreaterThan(MAX_POLL_INTERVAL);
    for (int i = 0; i < RECORDS; i++) {
      publish(0, "slow-" + i, "{\"n\":" + i + "}");
    }
    List<Call> calls = new CopyOnWriteArrayList<>();
    Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
    MessageHandler<SqlSession> slow = (message, session) -> {
      long start = System.nanoTime();
      String key = keyOf(message);
      runs.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
      Thread.sleep(HANDLER.toMillis());
      TestEffects.record(session, key, message.payload());
      calls.add(new Call(key, txid(session), start, System.nanoTime()));
    };
    AtomicInteger revokedOrLost = new AtomicInteger();
    KafkaConsumerConfig config = KafkaConsumerConfig.builder(KafkaTestClients.bootstrap(), topic)
        .consumerProperty("max.poll.interval.ms", (int) MAX_POLL_INTERVAL.toMillis())
        .build();
    assertThat(config.maxBatchSize()).isEqualTo(KafkaConsumerConfig.DEFAULT_MAX_BATCH_SIZE);
    try (KafkaIdempotentConsumer consumer = KafkaIdempotentConsumer.create(config, pipeline(slow),
        properties -> new KafkaConsumer<byte[], byte[]>(properties) {
          @Override
          public void subscribe(Collection<String> topics, ConsumerRebalanceListener listener) {
            super.subscribe(topics, counting(listener, revokedOrLost));
          }
        }, KafkaProducer::new)) {
      consumer.start();
      // every record takes HANDLER: three times their sum, plus the usual margin for the group join
      Duration expected = HANDLER.multipliedBy(RECORDS);
      await("every effect").atMost(TIMEOUT.plus(expected.multipliedBy(3)))
          .until(() -> effects.distinctKeys() == RECORDS);
      awaitSettled();
      Set<String> members = members();

      assertThat(revokedOrLost).as("partitions revoked or lost while the consumer ran").hasValue(0);
      assertThat(members).hasSize(1);
      assertThat(effects.total()).isEqualTo(RECORDS);
      assertThat(effects.doubled()).isZero();
      assertThat(runs).hasSize(RECORDS).allSatisfy((key, n) -> assertThat(n.get()).as(key).isEqualTo(1));
      assertThat(outcomes.count(ProcessingOutcome.DUPLICATE)).isZero();
      assertThat(outcomes.count(ProcessingOutcome.RETRY)).isZero();

      Map<Long, List<Call>> transactions = calls.stream().collect(Collectors.groupingBy(Call::txid));
      int largest = transactions.values().stream().mapToInt(List::size).max().orElse(0);
      long longestNanos = transactions.values().stream()
          .mapToLong(t -> t.get(t.size() - 1).endNanos() - t.get(0).startNanos()).max().orElse(0);
      System.out.printf("slow handler in batch mode: %d transactions for %d records, largest %d, longest %d ms%n",
          transactions.size(), RECORDS, largest, TimeUnit.NANOSECONDS.toMillis(longestNanos));
      assertThat(largest).as("records in the largest transaction: batch mode is in effect").isGreaterThan(1);
      assertThat(largest).isLessThan(KafkaConsumerConfig.DEFAULT_MAX_BATCH_SIZE);
      assertThat(Duration.ofNanos(longestNanos)).as("the longest batch").isLessThan(MAX_POLL_INTERVAL);
    }
  }

  private static ConsumerRebalanceListener counting(ConsumerRebalanceListener adapter, AtomicInteger counter) {
    return new ConsumerRebalanceListener() {
      @Override
      public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
        if (!partitions.isEmpty()) {
          counter.incrementAndGet();
        }
        adapter.onPartitionsRevoked(partitions);
      }

      @Override
      public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
        adapter.onPartitionsAssigned(partitions);
      }

      @Override
      public void onPartitionsLost(Collection<TopicPartition> partitions) {
        if (!partitions.isEmpty()) {
          counter.incrementAndGet();
        }
        adapter.onPartitionsLost(partitions);
      }
    };
  }

  private static long txid(SqlSession session) throws Exception {
    try (PreparedStatement ps = session.getConnection().prepareStatement("SELECT txid_current()");
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private Set<String> members() throws Exception {
    return KafkaTestClients.members(group);
  }
}
