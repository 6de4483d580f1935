package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import io.idem.IdempotencyKey;
import io.idem.IdempotentConsumer;
import io.idem.KeySource;
import io.idem.RetryPolicy;
import io.idem.fixtures.ChildJvm;
import io.idem.fixtures.PostgresFixture;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A record whose handler kills the process (issue 23; docs/BROKERS.md, Kafka "Attempts"): Kafka
 * keeps no delivery count, so the adapter flags the records a dead owner may have had in a handler
 * (from the committed offset on, after an assignment that was not a clean handover) and the
 * pipeline counts their attempts in the store before the handler runs. The consumer runs in a
 * child JVM that halts in the poison's handler; the broker (in this JVM) outlives it. The test
 * restarts the child until the poison is in the dead-letter topic with MAX_ATTEMPTS_EXCEEDED —
 * after exactly maxAttempts deaths — and every good record around it is applied exactly once.
 */
class KafkaProcessKillingMessageIT extends KafkaITSupport {
  private static final int MAX_ATTEMPTS = 3;
  private static final int GOOD = 6;
  private static final String POISON = "poison";
  private static final Duration CHILD_LIFE = Duration.ofSeconds(90);

  @Override
  protected int partitions() {
    return 1;
  }

  /**
   * @param batch the consumer's maxBatchSize (1: per-message mode)
   * @param poisonAt how many good records come before the poison on the partition
   * @param concurrency the consumer's concurrency (above 1: partitions run on workers)
   */
  @ParameterizedTest(name = "maxBatchSize {0}, poison after {1} good records, concurrency {2}")
  @CsvSource({"1, 3, 1", "20, 3, 1", "1, 0, 1", "20, 3, 2"})
  void aRecordThatHaltsTheJvmIsDeadLetteredAfterMaxAttemptsDeathsAndTheOthersAreAppliedOnce(
      int batch, int poisonAt, int concurrency) {
    List<String> keys = new ArrayList<>();
    for (int i = 1; i <= GOOD; i++) {
      if (keys.size() == poisonAt) {
        keys.add(POISON);
      }
      keys.add("good-" + i);
    }
    keys.forEach(key -> publish(0, key, "{\"key\":\"" + key + "\"}"));

    List<String> poisonRuns = new ArrayList<>();
    int deaths = 0;
    for (int start = 1; ; start++) {
      assertThat(start).as("child starts (deaths so far %d; poison runs %s)", deaths, poisonRuns)
          .isLessThanOrEqualTo(MAX_ATTEMPTS + 1);
      try (ChildJvm child = child("poison-" + start, batch, concurrency)) {
        await("child " + start + " dies in the poison's handler, or settles everything")
            .atMost(CHILD_LIFE).pollInterval(Duration.ofMillis(100))
            .until(() -> !child.isAlive() || (effects.total() == GOOD && lag() == 0));
        child.lines().stream().filter(l -> l.contains("POISON-RUN")).forEach(poisonRuns::add);
        if (!child.isAlive()) {
          assertThat(child.waitFor(Duration.ofSeconds(10))).as("halted by the poison")
              .isEqualTo(KafkaCrashChild.POISON_STATUS);
          deaths++;
          continue;
        }
        assertThat(child.printed("POISON-RUN")).as("not run once its attempts are spent").isFalse();
        break;
      }
    }
    assertThat(deaths).as("deaths before Idem dead-lettered it").isEqualTo(MAX_ATTEMPTS);
    assertThat(poisonRuns).as("the attempts its handler saw").hasSize(MAX_ATTEMPTS)
        .allMatch(line -> line.matches(".*POISON-RUN attempt=[1-" + MAX_ATTEMPTS + "]$"));

    for (int i = 1; i <= GOOD; i++) {
      assertThat(effects.count("good-" + i)).as("effects of good-%d", i).isEqualTo(1);
    }
    assertThat(effects.count(POISON)).isZero();
    assertThat(effects.doubled()).isZero();
    List<ConsumerRecord<byte[], byte[]>> dead = KafkaTestClients.readAll(deadLetterTopic);
    assertThat(dead).as("only the poison, with Idem's reason").hasSize(1);
    assertThat(text(dead.get(0), DeadLetterReason.HEADER_KEY)).isEqualTo(POISON);
    assertThat(text(dead.get(0), DeadLetterReason.HEADER_CAUSE))
        .isEqualTo(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED.name());
    assertThat(text(dead.get(0), DeadLetterReason.HEADER_DETAIL)).contains("the process died");
    assertThat(committed(0)).isEqualTo(keys.size());
    assertThat(store.attempts(new IdempotencyKey(group, POISON, KeySource.HEADER)))
        .as("the count went with the dead letter").isZero();
  }

  /**
   * An {@link OutOfMemoryError} in the poison's handler stops the consumer while the JVM lives on
   * (its run's count, written before the handler, is not cleared); the application starts a new
   * consumer each time. The poison's handler runs maxAttempts times in all, then it is
   * dead-lettered, and the good records are applied once.
   */
  @ParameterizedTest(name = "maxBatchSize {0}")
  @CsvSource({"1", "20"})
  void anErrorThatStopsTheConsumerCountsAsAnAttempt(int batch) {
    List<String> keys = List.of("good-1", "good-2", POISON, "good-3", "good-4");
    keys.forEach(key -> publish(0, key, "{\"key\":\"" + key + "\"}"));
    AtomicInteger poisonRuns = new AtomicInteger();
    io.idem.MessageHandler<org.apache.ibatis.session.SqlSession> recording = recording();
    IdempotentConsumer<org.apache.ibatis.session.SqlSession> pipeline = IdempotentConsumer.builder(store)
        .consumerGroup(group)
        .handler((message, session) -> {
          if (keyOf(message).equals(POISON)) {
            poisonRuns.incrementAndGet();
            throw new OutOfMemoryError("simulated: the poison's handler ran out of memory");
          }
          recording.handle(message, session);
        })
        .retryPolicy(RetryPolicy.builder().maxAttempts(MAX_ATTEMPTS).initialBackoff(Duration.ofMillis(100)).build())
        .listener(outcomes)
        .build();
    for (int start = 1; ; start++) {
      assertThat(start).as("consumer starts (poison runs so far %d)", poisonRuns.get())
          .isLessThanOrEqualTo(MAX_ATTEMPTS + 1);
      KafkaIdempotentConsumer consumer = start(pipeline, b -> b.maxBatchSize(batch));
      await("consumer " + start + " stopped by the Error, or everything settled").atMost(TIMEOUT)
          .until(() -> consumer.failure().isPresent() || (effects.total() == 4 && lag() == 0));
      if (consumer.failure().isPresent()) {
        assertThat(consumer.failure().get()).isInstanceOf(OutOfMemoryError.class);
        consumer.close();
        continue;
      }
      consumer.close();
      break;
    }
    assertThat(poisonRuns).as("handler runs of the poison").hasValue(MAX_ATTEMPTS);
    for (String key : List.of("good-1", "good-2", "good-3", "good-4")) {
      assertThat(effects.count(key)).as("effects of " + key).isEqualTo(1);
    }
    assertThat(effects.doubled()).isZero();
    List<ConsumerRecord<byte[], byte[]>> dead = KafkaTestClients.readAll(deadLetterTopic);
    assertThat(dead).as("only the poison, with Idem's reason").hasSize(1);
    assertThat(text(dead.get(0), DeadLetterReason.HEADER_KEY)).isEqualTo(POISON);
    assertThat(text(dead.get(0), DeadLetterReason.HEADER_CAUSE))
        .isEqualTo(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED.name());
    assertThat(committed(0)).isEqualTo(keys.size());
  }

  private ChildJvm child(String name, int batch, int concurrency) {
    PostgresFixture postgres = PostgresFixture.shared();
    List<String> jvmArgs = List.of(
        "-Xmx256m",
        "-Didem.test.bootstrap=" + KafkaTestClients.bootstrap(),
        "-Didem.test.topic=" + topic,
        "-Didem.test.group=" + group,
        "-Didem.test.jdbc-url=" + postgres.jdbcUrl(),
        "-Didem.test.jdbc-user=" + postgres.user(),
        "-Didem.test.jdbc-password=" + postgres.password(),
        "-Didem.test.schema=" + dataSource.getSchema(),
        "-Didem.test.batch=" + batch,
        "-Didem.test.concurrency=" + concurrency,
        "-Didem.test.commit-interval-ms=100",
        "-Didem.test.poison-key=" + POISON,
        "-Didem.test.max-attempts=" + MAX_ATTEMPTS);
    return ChildJvm.start(name, KafkaCrashChild.class, jvmArgs, List.of(), Map.of(), System.out::println);
  }

  private static String text(ConsumerRecord<byte[], byte[]> record, String header) {
    return new String(record.headers().lastHeader(header).value(), StandardCharsets.UTF_8);
  }
}
