package io.idem.sqs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.fixtures.ChildJvm;
import io.idem.fixtures.PostgresFixture;
import io.idem.testkit.CrashInjector;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Batch mode under kill -9: a consumer in a child JVM with {@code maxBatchSize} 10 is killed, then
 * a consumer in this JVM takes over; every message is applied exactly once (0 doubled, 0 missing).
 * {@code AFTER_COMMIT} halts the child right after a batch's COMMIT, before any of its deletes;
 * {@code SIGKILL} kills it from outside (SIGKILL) once some batches committed, wherever it is.
 */
class SqsBatchCrashIT extends SqsTestBase {
  private static final int MESSAGES = 60;

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"AFTER_COMMIT", "SIGKILL"})
  void killedInBatchModeThenRestartedAppliesEveryMessageOnce(String how) {
    SqsHarness queue = queue(false);
    for (int i = 0; i < MESSAGES; i++) {
      publish(queue, "batch-crash-" + i, "{\"n\":" + i + "}");
    }
    PostgresFixture postgres = PostgresFixture.shared();
    List<String> jvmArgs = new ArrayList<>(List.of("-Xmx256m", "-Didem.test.handler-delay-ms=20",
        "-Didem.test.jdbc.url=" + postgres.jdbcUrl(), "-Didem.test.jdbc.user=" + postgres.user(),
        "-Didem.test.jdbc.password=" + postgres.password(), "-Didem.test.jdbc.schema=" + db.schema));
    boolean halt = how.equals("AFTER_COMMIT");
    if (halt) {
      jvmArgs.addAll(List.of("-Didem.crash.point=AFTER_COMMIT", "-Didem.crash.after=14"));
    }
    ChildJvm child = ChildJvm.start("sqs-batch-crash-" + how, SqsCrashChild.class, jvmArgs,
        List.of(queue.queueUrl(), queue.dlqUrl(), group, "100", "10"),
        Map.of("IDEM_SQS_ENDPOINT", fixture.endpoint().toString()),
        System.out::println);
    try (child) {
      if (halt) {
        assertThat(child.waitFor(Duration.ofSeconds(90))).isEqualTo(CrashInjector.EXIT_STATUS);
      } else {
        await("some batches committed").atMost(TIMEOUT).pollInterval(Duration.ofMillis(20))
            .until(() -> db.total() >= 10);
        child.kill();
      }
    }
    int committedBeforeRestart = db.total();
    assertThat(committedBeforeRestart).as("committed before the kill").isBetween(1, MESSAGES - 1);

    start(queue.config().visibilityTimeout(SqsCrashIT.VISIBILITY).maxBatchSize(10).build(),
        pipeline(recording(), retries(3)));
    await().atMost(TIMEOUT).until(() -> db.total() == MESSAGES);
    await().atMost(TIMEOUT).until(() -> queue.pendingCount() == 0);

    assertThat(db.doubled()).isZero();
    for (int i = 0; i < MESSAGES; i++) {
      assertThat(db.count("batch-crash-" + i)).as("effects of batch-crash-%d", i).isEqualTo(1);
    }
    assertThat(queue.deadLetters()).isEmpty();
  }
}
