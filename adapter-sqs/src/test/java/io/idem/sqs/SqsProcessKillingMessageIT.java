package io.idem.sqs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import io.idem.IdempotencyKey;
import io.idem.KeySource;
import io.idem.fixtures.ChildJvm;
import io.idem.fixtures.PostgresFixture;
import io.idem.testkit.DeadLetteredMessage;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.slf4j.LoggerFactory;

/**
 * A message whose handler kills the process (issue 23, docs/FAILURES.md "Attempts that survive
 * the process") on SQS: {@code ApproximateReceiveCount} counts every receive, also of the
 * messages received with the poison that never reached a handler, and nothing in memory survives
 * the death. The consumer runs in a child JVM ({@link SqsPoisonChild}) on the test JVM's
 * ElasticMQ, which outlives it; its handler of the poison calls {@code Runtime.halt}. The test
 * restarts the child until the poison is in Idem's dead-letter queue with MAX_ATTEMPTS_EXCEEDED —
 * after exactly maxAttempts deaths — and asserts that every good message, before and behind the
 * poison (on FIFO: in its group), was applied exactly once, and that an applied message came back
 * at most once more as a duplicate (its delete, batched, is sent before a flagged message runs,
 * instead of dying with the process every time).
 */
class SqsProcessKillingMessageIT extends SqsTestBase {
  private static final Duration CHILD_LIFE = Duration.ofSeconds(90);
  private static final String POISON = "poison";
  private static final List<String> BEFORE = List.of("good-1", "good-2");
  private static final List<String> BEHIND = List.of("good-3", "good-4");
  /** FIFO: one group, so that the good messages behind the poison wait for it. */
  private static final String GROUP = "g";

  @TempDir
  Path temp;

  /**
   * With {@code maxReceiveCount} above 0 the queue has a {@code RedrivePolicy} with that limit —
   * maxAttempts + 1, the lowest that lets Idem act first — into the dead-letter queue Idem copies
   * to; SQS would move the poison, and the good messages received with it at each death, without
   * Idem's reason one receive later.
   */
  @ParameterizedTest(name = "fifo {0}, maxBatchSize {1}, maxReceiveCount {2}")
  @CsvSource({"false, 1, 0", "true, 1, 0", "false, 10, 0", "true, 10, 0", "false, 1, 4", "true, 10, 4"})
  void aHandlerThatHaltsTheJvmIsDeadLetteredAfterMaxAttemptsDeaths(boolean fifo, int maxBatchSize,
      int maxReceiveCount) throws Exception {
    SqsHarness target = maxReceiveCount == 0 ? null : queue(fifo);
    SqsHarness queue = target == null
        ? queue(fifo)
        : queue(fifo, SqsAttemptAccountingIT.redrivePolicy(target, maxReceiveCount));
    SqsHarness letters = target == null ? queue : target;
    List<String> good = new ArrayList<>(BEFORE);
    good.addAll(BEHIND);
    BEFORE.forEach(key -> publish(queue, key));
    publish(queue, POISON);
    BEHIND.forEach(key -> publish(queue, key));

    Path stop = temp.resolve("stop");
    // a delete window long enough that the good messages' deletes are still pending when the
    // poison's handler runs in the same receive
    List<String> args = List.of(queue.queueUrl(), letters.dlqUrl(), group, stop.toString(), POISON,
        Integer.toString(maxBatchSize), "1000", "HALT");
    List<String> printed = new ArrayList<>();
    int deaths = 0;
    for (int start = 1; ; start++) {
      assertThat(start).as("child starts (deaths so far %d)", deaths)
          .isLessThanOrEqualTo(SqsPoisonChild.MAX_ATTEMPTS + 1);
      try (ChildJvm child = poisonChild(start, args)) {
        await("child " + start + " dies in the poison's handler, or settles everything")
            .atMost(CHILD_LIFE).pollInterval(Duration.ofMillis(100))
            .until(() -> !child.isAlive()
                || (db.total() == good.size() && child.printed("OUTCOME " + POISON + " DEAD_LETTERED")));
        if (!child.isAlive()) {
          assertThat(child.waitFor(Duration.ofSeconds(10))).as("halted by the poison").isEqualTo(1);
          assertThat(child.printed("POISON-RUN")).isTrue();
          printed.addAll(child.lines());
          deaths++;
          continue;
        }
        assertThat(child.printed("POISON-RUN")).as("not run once its attempts are spent").isFalse();
        await("the queue drained").atMost(CHILD_LIFE).until(() -> queue.pendingCount() == 0);
        Files.createFile(stop);
        assertThat(child.waitFor(CHILD_LIFE)).isZero();
        printed.addAll(child.lines());
        break;
      }
    }
    assertThat(deaths).as("deaths before Idem dead-lettered it").isEqualTo(SqsPoisonChild.MAX_ATTEMPTS);
    assertOutcome(queue, letters, printed);
  }

  /**
   * An OutOfMemoryError in the poison's handler stops the consumer (the JVM lives on); the child
   * replaces it on the same queue. The new consumer's ledger (shared in the JVM) knows the
   * handler was started and never ended, so the redelivery is counted like a death.
   */
  @ParameterizedTest(name = "fifo {0}, maxBatchSize {1}")
  @CsvSource({"false, 1", "true, 10"})
  void anOutOfMemoryErrorThatStopsTheConsumerCountsAsAnAttempt(boolean fifo, int maxBatchSize) throws Exception {
    SqsHarness queue = queue(fifo);
    List<String> good = new ArrayList<>(BEFORE);
    good.addAll(BEHIND);
    BEFORE.forEach(key -> publish(queue, key));
    publish(queue, POISON);
    BEHIND.forEach(key -> publish(queue, key));
    Path stop = temp.resolve("stop-oom");
    List<String> args = List.of(queue.queueUrl(), queue.dlqUrl(), group, stop.toString(), POISON,
        Integer.toString(maxBatchSize), "1000", "OOM");
    List<String> printed;
    try (ChildJvm child = poisonChild(1, args)) {
      await("the poison dead-lettered and the others applied").atMost(CHILD_LIFE.multipliedBy(2))
          .pollInterval(Duration.ofMillis(100))
          .until(() -> !child.isAlive() || poisonRuns(child) > SqsPoisonChild.MAX_ATTEMPTS
              || (db.total() == good.size() && child.printed("OUTCOME " + POISON + " DEAD_LETTERED")));
      assertThat(child.isAlive()).as("the JVM lives on").isTrue();
      assertThat(poisonRuns(child)).as("handler runs of the poison").isLessThanOrEqualTo(SqsPoisonChild.MAX_ATTEMPTS);
      await("the queue drained").atMost(CHILD_LIFE).until(() -> queue.pendingCount() == 0);
      Files.createFile(stop);
      assertThat(child.waitFor(CHILD_LIFE)).isZero();
      printed = child.lines();
    }
    assertThat(printed).as("handler runs of the poison").filteredOn(l -> l.contains("POISON-RUN"))
        .hasSize(SqsPoisonChild.MAX_ATTEMPTS);
    assertOutcome(queue, queue, printed);
  }

  /**
   * A {@code RedrivePolicy} whose {@code maxReceiveCount} is not above maxAttempts would move a
   * process-killing message before Idem dead-letters it: warned at start; one above is not.
   */
  @Test
  void aRedriveLimitNotAboveMaxAttemptsIsWarnedAtStart() {
    ListAppender<ILoggingEvent> logged = new ListAppender<>();
    Logger log = (Logger) LoggerFactory.getLogger(SqsIdempotentConsumer.class);
    logged.start();
    log.addAppender(logged);
    try {
      SqsHarness target = queue(false);
      SqsHarness atLimit = queue(false, SqsAttemptAccountingIT.redrivePolicy(target, 3));
      start(atLimit.config().deadLetterQueueUrl(target.dlqUrl()).build(), pipeline(recording(), retries(3)));
      assertThat(warnings(logged)).as("maxReceiveCount 3, maxAttempts 3").singleElement().asString()
          .contains("maxReceiveCount=3", "maxAttempts=3", "kills the process", "at least 6");
      logged.list.clear();
      SqsHarness above = queue(false, SqsAttemptAccountingIT.redrivePolicy(target, 4));
      start(above.config().deadLetterQueueUrl(target.dlqUrl()).build(), pipeline(recording(), retries(3)));
      assertThat(warnings(logged)).as("maxReceiveCount 4, maxAttempts 3").isEmpty();
    } finally {
      log.detachAppender(logged);
    }
  }

  private static long poisonRuns(ChildJvm child) {
    return child.lines().stream().filter(l -> l.contains("POISON-RUN")).count();
  }

  private static List<String> warnings(ListAppender<ILoggingEvent> logged) {
    return logged.list.stream().filter(e -> e.getLevel() == Level.WARN && e.getFormattedMessage().contains("maxReceiveCount"))
        .map(ILoggingEvent::getFormattedMessage).toList();
  }

  private void assertOutcome(SqsHarness queue, SqsHarness letters, List<String> printed) {
    List<String> good = new ArrayList<>(BEFORE);
    good.addAll(BEHIND);
    for (String key : good) {
      assertThat(db.count(key)).as("effects of %s", key).isEqualTo(1);
      assertThat(printed).as("outcomes of %s", key).filteredOn(l -> l.equals("OUTCOME " + key + " PROCESSED"))
          .hasSize(1);
      assertThat(printed).as("%s received again as a duplicate (its delete died with the process)", key)
          .filteredOn(l -> l.equals("OUTCOME " + key + " DUPLICATE")).hasSizeLessThanOrEqualTo(1);
    }
    assertThat(db.count(POISON)).isZero();
    assertThat(db.total()).isEqualTo(good.size());
    List<DeadLetteredMessage> dead = letters.deadLetters();
    assertThat(dead).as("only the poison, with Idem's reason").hasSize(1);
    assertThat(dead.get(0).headers().get(DeadLetterReason.HEADER_KEY)).isEqualTo(POISON);
    assertThat(dead.get(0).cause()).isEqualTo(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED.name());
    assertThat(dead.get(0).detail()).contains("the process died");
    assertThat(queue.pendingCount()).as("nothing left in the queue").isZero();
    assertThat(db.store.attempts(new IdempotencyKey(group, POISON, KeySource.HEADER)))
        .as("the count went with the dead letter").isZero();
  }

  private static void publish(SqsHarness queue, String key) {
    queue.publish(Map.of("idempotency-key", key), ("{\"key\":\"" + key + "\"}").getBytes(StandardCharsets.UTF_8),
        GROUP);
  }

  private ChildJvm poisonChild(int start, List<String> args) {
    PostgresFixture postgres = PostgresFixture.shared();
    return ChildJvm.start("sqs-poison-" + start, SqsPoisonChild.class,
        List.of("-Xmx256m",
            "-Didem.test.jdbc.url=" + postgres.jdbcUrl(), "-Didem.test.jdbc.user=" + postgres.user(),
            "-Didem.test.jdbc.password=" + postgres.password(), "-Didem.test.jdbc.schema=" + db.schema),
        args, Map.of("IDEM_SQS_ENDPOINT", fixture.endpoint().toString()), System.out::println);
  }
}
