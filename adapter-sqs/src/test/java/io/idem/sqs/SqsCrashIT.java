package io.idem.sqs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.ProcessingOutcome;
import io.idem.fixtures.ChildJvm;
import io.idem.fixtures.PostgresFixture;
import io.idem.testkit.CrashInjector;
import io.idem.testkit.CrashPoint;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * kill -9 style crashes of a consumer in a child JVM, then a restart: every message is applied
 * exactly once. AFTER_COMMIT halts after the transaction committed and before the delete was even
 * queued; DURING_ACK halts while the synchronous DeleteMessage is on its way (delete batch window
 * zero); AFTER_HANDLER halts before the commit.
 */
class SqsCrashIT extends SqsTestBase {
  static final Duration VISIBILITY = Duration.ofSeconds(2);
  private static final int MESSAGES = 12;

  @ParameterizedTest(name = "{0}, delete batch window {1} ms")
  @CsvSource({"AFTER_COMMIT, 100", "DURING_ACK, 0", "AFTER_HANDLER, 100"})
  void crashThenRestartAppliesEveryMessageOnce(CrashPoint point, long windowMillis) {
    SqsHarness queue = queue(false);
    for (int i = 0; i < MESSAGES; i++) {
      publish(queue, "crash-" + i, "{\"n\":" + i + "}");
    }
    PostgresFixture postgres = PostgresFixture.shared();
    ChildJvm child = ChildJvm.start("sqs-crash-" + point, SqsCrashChild.class,
        List.of("-Xmx256m",
            "-Didem.crash.point=" + point, "-Didem.crash.after=4",
            "-Didem.test.jdbc.url=" + postgres.jdbcUrl(), "-Didem.test.jdbc.user=" + postgres.user(),
            "-Didem.test.jdbc.password=" + postgres.password(), "-Didem.test.jdbc.schema=" + db.schema),
        List.of(queue.queueUrl(), queue.dlqUrl(), group, Long.toString(windowMillis)),
        Map.of("IDEM_SQS_ENDPOINT", fixture.endpoint().toString()),
        System.out::println);
    try (child) {
      assertThat(child.waitFor(Duration.ofSeconds(90))).isEqualTo(CrashInjector.EXIT_STATUS);
    }
    String crashLine = child.lines().stream().filter(l -> l.startsWith("IDEM-CRASH ")).findFirst().orElseThrow();
    String crashedKey = crashLine.split(" ")[2];
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
}
