package io.idem.sqs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.DeadLetterCause;
import io.idem.ProcessingOutcome;
import io.idem.fixtures.ChildJvm;
import io.idem.fixtures.PostgresFixture;
import io.idem.testkit.CrashInjector;
import io.idem.testkit.CrashPoint;
import io.idem.testkit.DeadLetteredMessage;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * kill -9 style crashes of a consumer in a child JVM, then a restart: every message is applied
 * exactly once. AFTER_COMMIT halts after the transaction committed and before the delete was even
 * queued; DURING_ACK halts inside the DeleteMessage call (batch window zero) or inside the
 * DeleteMessageBatch of a later flush (window 100 ms), once SQS performed it and before the adapter
 * learned it; AFTER_HANDLER halts before the commit; DEAD_LETTER_COPY_STORED halts once the
 * dead-letter SendMessage was accepted, before the original is deleted.
 */
class SqsCrashIT extends SqsTestBase {
  static final Duration VISIBILITY = Duration.ofSeconds(2);
  private static final int MESSAGES = 12;

  @ParameterizedTest(name = "{0}, delete batch window {1} ms")
  @CsvSource({"AFTER_COMMIT, 100", "DURING_ACK, 0", "DURING_ACK, 100", "AFTER_HANDLER, 100"})
  void crashThenRestartAppliesEveryMessageOnce(CrashPoint point, long windowMillis) {
    SqsHarness queue = queue(false);
    for (int i = 0; i < MESSAGES; i++) {
      publish(queue, "crash-" + i, "{\"n\":" + i + "}");
    }
    ChildJvm child = crashChild(queue, point, point == CrashPoint.DURING_ACK ? 1 : 4, windowMillis);
    try (child) {
      assertThat(child.waitFor(Duration.ofSeconds(90))).isEqualTo(CrashInjector.EXIT_STATUS);
    }
    String crashLine = child.lines().stream().filter(l -> l.startsWith("IDEM-CRASH ")).findFirst().orElseThrow();
    String crashedKey = crashLine.split(" ")[2];
    if (point == CrashPoint.DURING_ACK) {
      // it landed inside the broker's delete, not after the commit on its way there
      assertThat(crashedKey).isEqualTo(windowMillis == 0 ? "deleteMessage" : "deleteMessageBatch");
    }
    int committedBeforeRestart = db.total();

    start(queue.config().visibilityTimeout(VISIBILITY).build(), pipeline(recording(), retries(3)));
    await().atMost(TIMEOUT).until(() -> db.total() == MESSAGES);
    await().atMost(TIMEOUT).until(() -> queue.pendingCount() == 0);

    assertThat(db.doubled()).isZero();
    for (int i = 0; i < MESSAGES; i++) {
      assertThat(db.count("crash-" + i)).as("effects of crash-%d", i).isEqualTo(1);
    }
    if (point == CrashPoint.AFTER_COMMIT) {
      assertThat(outcomes.count(crashedKey, ProcessingOutcome.DUPLICATE)).isEqualTo(1);
    }
    if (point == CrashPoint.AFTER_HANDLER) {
      assertThat(outcomes.count(crashedKey, ProcessingOutcome.PROCESSED)).isEqualTo(1);
    }
    // whatever the child committed came back as duplicates at most; nothing was applied twice
    assertThat(outcomes.count(ProcessingOutcome.PROCESSED)).isEqualTo(MESSAGES - committedBeforeRestart);
  }

  private ChildJvm crashChild(SqsHarness queue, CrashPoint point, int after, long windowMillis) {
    PostgresFixture postgres = PostgresFixture.shared();
    return ChildJvm.start("sqs-crash-" + point, SqsCrashChild.class,
        List.of("-Xmx256m",
            "-Didem.crash.point=" + point, "-Didem.crash.after=" + after,
            "-Didem.crash.broker-calls=intercepted",
            "-Didem.test.jdbc.url=" + postgres.jdbcUrl(), "-Didem.test.jdbc.user=" + postgres.user(),
            "-Didem.test.jdbc.password=" + postgres.password(), "-Didem.test.jdbc.schema=" + db.schema),
        List.of(queue.queueUrl(), queue.dlqUrl(), group, Long.toString(windowMillis)),
        Map.of("IDEM_SQS_ENDPOINT", fixture.endpoint().toString()),
        System.out::println);
  }

  @Test
  void crashAfterTheDeadLetterCopyWasStoredLosesNothingAndEveryCopyCarriesItsReason() {
    SqsHarness queue = queue(false);
    publish(queue, "before-poison", "{}");
    queue.publish(Map.of("x-poison", "p-1"), "{\"no\":\"key\"}".getBytes(StandardCharsets.UTF_8));
    publish(queue, "after-poison", "{}");
    ChildJvm child = crashChild(queue, CrashPoint.DEAD_LETTER_COPY_STORED, 0, 100);
    try (child) {
      assertThat(child.waitFor(Duration.ofSeconds(90))).isEqualTo(CrashInjector.EXIT_STATUS);
    }
    assertThat(child.lines()).as("halted inside the dead-letter SendMessage")
        .contains("IDEM-CRASH DEAD_LETTER_COPY_STORED sendMessage");
    // the copy was stored before the halt, and the original is still on its queue
    assertThat(queue.deadLetters()).hasSize(1);

    start(queue.config().visibilityTimeout(VISIBILITY).build(), pipeline(recording(), retries(3)));
    await().atMost(TIMEOUT).until(() -> db.total() == 2 && queue.pendingCount() == 0);
    assertThat(db.count("before-poison")).isEqualTo(1);
    assertThat(db.count("after-poison")).isEqualTo(1);
    // the redelivered original is dead-lettered again: a second copy, the same identifiers and a
    // reason (deduplicating dead letters is what the store-recorded dead-letter decision is for)
    List<DeadLetteredMessage> copies = queue.deadLetters();
    assertThat(copies).hasSizeBetween(1, 2).allSatisfy(copy -> {
      assertThat(copy.cause()).isEqualTo(DeadLetterCause.NO_KEY.name());
      assertThat(copy.detail()).isNotBlank();
      assertThat(copy.headers()).containsEntry("x-poison", "p-1");
    });
  }

  /**
   * A keyed message dead-lettered by its handler, the child halted inside the dead-letter
   * SendMessage (the copy stored, the original not deleted): the store holds the decision, so the
   * restarted consumer — whose handler would now succeed — dead-letters the redelivered original
   * again with the recorded reason and never runs its handler (docs/FAILURES.md, "Dead-lettering
   * twice").
   */
  @Test
  void aKeyedMessageDeadLetteredBeforeTheCrashIsNeverHandledAfterIt() {
    SqsHarness queue = queue(false);
    publish(queue, "before-poison", "{}");
    queue.publish(Map.of("idempotency-key", "poison-1", "x-fail", "non-retryable"),
        "{\"poison\":1}".getBytes(StandardCharsets.UTF_8));
    publish(queue, "after-poison", "{}");
    ChildJvm child = crashChild(queue, CrashPoint.DEAD_LETTER_COPY_STORED, 0, 100);
    try (child) {
      assertThat(child.waitFor(Duration.ofSeconds(90))).isEqualTo(CrashInjector.EXIT_STATUS);
    }
    assertThat(child.lines()).as("halted inside the dead-letter SendMessage")
        .contains("IDEM-CRASH DEAD_LETTER_COPY_STORED sendMessage");
    assertThat(queue.deadLetters()).as("the copy stored before the halt").hasSize(1);
    assertThat(db.count("poison-1")).isZero();

    // the restarted consumer's handler would apply it: only the recorded decision keeps it out
    start(queue.config().visibilityTimeout(VISIBILITY).build(), pipeline(recording(), retries(3)));
    await().atMost(TIMEOUT).until(() -> queue.pendingCount() == 0 && db.count("after-poison") == 1
        && outcomes.count("poison-1", ProcessingOutcome.DEAD_LETTERED)
            + outcomes.count("poison-1", ProcessingOutcome.CONFLICT)
            + outcomes.count("poison-1", ProcessingOutcome.PROCESSED) > 0);
    assertThat(outcomes.count("poison-1", ProcessingOutcome.DEAD_LETTERED))
        .as("dead-lettered again with its reason").isEqualTo(1);
    assertThat(db.count("before-poison")).isEqualTo(1);
    assertThat(db.count("after-poison")).isEqualTo(1);
    assertThat(db.count("poison-1")).as("never handled after the crash").isZero();
    assertThat(outcomes.count("poison-1", ProcessingOutcome.PROCESSED)).isZero();
    // a standard queue cannot deduplicate the copy: the second one carries the same identifiers
    List<DeadLetteredMessage> copies = queue.deadLetters();
    assertThat(copies).hasSize(2).allSatisfy(copy -> {
      assertThat(copy.cause()).isEqualTo(DeadLetterCause.NON_RETRYABLE.name());
      assertThat(copy.detail()).contains("poison poison-1");
      assertThat(copy.headers()).containsEntry("idempotency-key", "poison-1")
          .containsEntry("idem-idempotency-key", "poison-1")
          .containsEntry("idem-consumer-group", group);
    });
  }
}
