package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.ProcessingOutcome;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/**
 * Through retries (seek back to a failed record) and rebalances (a second consumer joins, then
 * leaves), the group's committed offset of every partition only moves forward.
 */
class CommittedOffsetsNeverGoBackwardsIT extends KafkaITSupport {
  private static final int RECORDS = 300;

  @Override
  protected int partitions() {
    return 3;
  }

  @Test
  void committedOffsetsOnlyMoveForward() throws Exception {
    Set<String> failedOnce = ConcurrentHashMap.newKeySet();
    List<Map<TopicPartition, Long>> samples = new CopyOnWriteArrayList<>();
    AtomicBoolean sampling = new AtomicBoolean(true);
    Thread sampler = new Thread(() -> {
      // a flag, not an interrupt: an interrupt landing inside an admin call is easily swallowed
      while (sampling.get()) {
        try {
          samples.add(committedOffsets());
          Thread.sleep(10);
        } catch (InterruptedException e) {
          return;
        } catch (RuntimeException e) {
          // a failed admin call is just a missed sample
        }
      }
    }, "offset-sampler");
    sampler.start();
    try {
      for (int i = 0; i < RECORDS; i++) {
        publish(i % 3, "k-" + i, "{\"n\":" + i + "}");
      }
      io.idem.MessageHandler<org.apache.ibatis.session.SqlSession> flaky = (message, session) -> {
        String key = keyOf(message);
        TestEffects.record(session, key, message.payload());
        if (key.hashCode() % 7 == 0 && failedOnce.add(key)) {
          throw new IllegalStateException("first attempt of " + key + " fails");
        }
        Thread.sleep(2);
      };
      KafkaIdempotentConsumer first = start(flaky, b -> b.maxPollRecords(20));
      await().atMost(TIMEOUT).until(() -> effects.total() >= RECORDS / 4);
      KafkaIdempotentConsumer second = start(flaky, b -> b.maxPollRecords(20));
      await().atMost(TIMEOUT).until(() -> effects.total() >= RECORDS * 3 / 4);
      second.close();
      await("all effects").atMost(TIMEOUT).until(() -> effects.distinctKeys() == RECORDS);
      first.close();
      awaitSettled();
      samples.add(committedOffsets());
    } finally {
      sampling.set(false);
      sampler.join(60_000);
      assertThat(sampler.isAlive()).as("offset sampler stopped").isFalse();
    }

    assertThat(failedOnce).isNotEmpty();
    assertThat(outcomes.count(ProcessingOutcome.RETRY)).isEqualTo(failedOnce.size());
    assertThat(samples).hasSizeGreaterThan(20);
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
    assertThat(effects.total()).isEqualTo(RECORDS);
    assertThat(effects.doubled()).isZero();
  }
}
