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
import java.util.concurrent.atomic.AtomicInteger;
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
    List<RuntimeException> samplerFailures = new CopyOnWriteArrayList<>();
    Map<String, AtomicInteger> handledBy = new ConcurrentHashMap<>();
    AtomicBoolean sampling = new AtomicBoolean(true);
    Thread sampler = new Thread(() -> {
      // back to back, as fast as the admin client answers; a flag, not an interrupt: an interrupt
      // landing inside an admin call is easily swallowed. A failed sample fails the test.
      while (sampling.get()) {
        try {
          samples.add(committedOffsets());
        } catch (RuntimeException e) {
          samplerFailures.add(e);
          return;
        }
      }
    }, "offset-sampler");
    sampler.start();
    try {
      int firstHalf = RECORDS / 3;
      for (int i = 0; i < firstHalf; i++) {
        publish(i % 3, "k-" + i, "{\"n\":" + i + "}");
      }
      KafkaIdempotentConsumer first = start(flaky("first", failedOnce, handledBy), b -> b.maxPollRecords(20));
      await().atMost(TIMEOUT).until(() -> effects.distinctKeys() == firstHalf);
      KafkaIdempotentConsumer second = start(flaky("second", failedOnce, handledBy), b -> b.maxPollRecords(20));
      // the rebalance took place: the second instance owns partitions (and the first no longer all)
      await("second consumer assigned").atMost(TIMEOUT)
          .until(() -> !second.health().consuming().isEmpty() && first.health().consuming().size() < 3);
      for (int i = firstHalf; i < RECORDS; i++) {
        publish(i % 3, "k-" + i, "{\"n\":" + i + "}");
      }
      await("the second consumer handled records").atMost(TIMEOUT).until(() -> handledBy.containsKey("second"));
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

    assertThat(samplerFailures).as("offset samples that failed").isEmpty();
    assertThat(handledBy).containsOnlyKeys("first", "second");
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

  /** Records the effect, fails the first attempt of every seventh key; counts records per instance. */
  private static io.idem.MessageHandler<org.apache.ibatis.session.SqlSession> flaky(
      String instance, Set<String> failedOnce, Map<String, AtomicInteger> handledBy) {
    return (message, session) -> {
      String key = keyOf(message);
      handledBy.computeIfAbsent(instance, i -> new AtomicInteger()).incrementAndGet();
      TestEffects.record(session, key, message.payload());
      if (key.hashCode() % 7 == 0 && failedOnce.add(key)) {
        throw new IllegalStateException("first attempt of " + key + " fails");
      }
    };
  }
}
