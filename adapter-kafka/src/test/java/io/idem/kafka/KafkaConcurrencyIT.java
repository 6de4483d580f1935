package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.MessageHandler;
import io.idem.ProcessingOutcome;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;
import org.apache.ibatis.session.SqlSession;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/**
 * {@link KafkaConsumerConfig#concurrency()} above 1 on a real broker and PostgreSQL: partitions
 * are really processed at the same time, each in its own order; a member joining mid-stream takes
 * partitions whose in-flight work was finished and committed first (no record processed twice,
 * not even as a skipped duplicate), and committed offsets never go backwards.
 */
class KafkaConcurrencyIT extends KafkaITSupport {

  @Override
  protected int partitions() {
    return 4;
  }

  @Test
  void partitionsAreProcessedInParallelEachInItsOrder() {
    int perPartition = 15;
    for (int i = 0; i < perPartition; i++) {
      for (int p = 0; p < 2; p++) {
        publish(p, "p" + p + "-" + i, "{}");
      }
    }
    // the first record of each partition waits in its handler until the other one is in its own:
    // only two handlers running at the same time get both through
    CountDownLatch bothInside = new CountDownLatch(2);
    AtomicBoolean overlapped = new AtomicBoolean(true);
    start((message, session) -> {
      String key = keyOf(message);
      if (key.endsWith("-0") && bothInside.getCount() > 0) {
        bothInside.countDown();
        if (!bothInside.await(TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
          overlapped.set(false);
        }
      }
      TestEffects.record(session, key, message.payload());
    }, b -> b.concurrency(2).maxBatchSize(5));

    await("every effect").atMost(TIMEOUT).until(() -> effects.total() == 2 * perPartition);
    awaitSettled();
    assertThat(bothInside.getCount()).isZero();
    assertThat(overlapped.get()).as("the two partitions' handlers ran at the same time").isTrue();
    List<String> order = effects.keysInOrder();
    for (int p = 0; p < 2; p++) {
      String prefix = "p" + p + "-";
      List<String> expected = new ArrayList<>();
      for (int i = 0; i < perPartition; i++) {
        expected.add(prefix + i);
      }
      assertThat(order).filteredOn(k -> k.startsWith(prefix)).containsExactlyElementsOf(expected);
    }
    assertThat(effects.doubled()).isZero();
  }

  @Test
  void aJoiningMemberTakesPartitionsWhoseInFlightWorkWasFinishedAndCommitted() {
    int records = 200;
    for (int i = 0; i < records; i++) {
      publish(i % 4, "r-" + i, "{\"n\":" + i + "}");
    }
    MessageHandler<SqlSession> slow = (message, session) -> {
      TestEffects.record(session, keyOf(message), message.payload());
      Thread.sleep(10);
    };
    // commits only on revocation (or close): the interval is an hour
    UnaryOperator<KafkaConsumerConfig.Builder> settings = b -> b.concurrency(2).commitInterval(Duration.ofHours(1))
        .maxPollRecords(10).consumerProperty("heartbeat.interval.ms", 100);
    start(slow, settings);
    await().atMost(TIMEOUT).until(() -> effects.total() >= 40);
    assertThat(lag()).isEqualTo(records); // nothing committed yet

    AtomicInteger handledBySecond = new AtomicInteger();
    start((message, session) -> {
      handledBySecond.incrementAndGet();
      slow.handle(message, session);
    }, settings);
    List<Map<TopicPartition, Long>> samples = new CopyOnWriteArrayList<>();
    await("all effects").atMost(TIMEOUT).pollInterval(Duration.ofMillis(50)).until(() -> {
      samples.add(committedOffsets());
      return effects.distinctKeys() == records;
    });

    assertThat(lag()).isLessThan(records); // the revocation committed what was settled
    assertThat(handledBySecond.get()).isPositive(); // partitions did move to the second member
    assertThat(effects.total()).isEqualTo(records);
    assertThat(effects.doubled()).isZero();
    assertThat(outcomes.count(ProcessingOutcome.PROCESSED)).isEqualTo(records);
    assertThat(outcomes.count(ProcessingOutcome.DUPLICATE)).isZero();
    Map<TopicPartition, Long> highest = new HashMap<>();
    List<String> backwards = new ArrayList<>();
    for (Map<TopicPartition, Long> sample : samples) {
      sample.forEach((partition, offset) -> {
        Long before = highest.get(partition);
        if (before != null && offset < before) {
          backwards.add(partition + ": " + before + " -> " + offset);
        }
        highest.merge(partition, offset, Math::max);
      });
    }
    assertThat(backwards).isEmpty();
    assertThat(highest).isNotEmpty();
  }
}
