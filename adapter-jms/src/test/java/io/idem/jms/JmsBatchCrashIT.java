package io.idem.jms;

import static io.idem.jms.JmsTestDatabase.attempts;
import static io.idem.jms.JmsTestDatabase.pipeline;
import static io.idem.jms.JmsTestDatabase.unique;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.BrokerConsumer;
import io.idem.ProcessingOutcome;
import io.idem.fixtures.ChildJvm;
import io.idem.fixtures.PostgresFixture;
import io.idem.jms.JmsTestDatabase.Effects;
import io.idem.testkit.CrashInjector;
import io.idem.testkit.OutcomeRecorder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A consumer JVM in batch mode ({@code maxBatchSize} 10) killed while it works through a backlog:
 * a batch whose database transaction committed and whose JMS session did not comes back and is
 * acked as duplicates; the rest is applied by the next consumer — 0 doubled, 0 missing.
 */
class JmsBatchCrashIT {
  private static final int MESSAGES = 100;
  private static final Duration TIMEOUT = Duration.ofSeconds(90);
  private static final String BATCH = "-Didem.jms.maxBatchSize=10";
  private JmsHarness harness;

  @AfterEach
  void tearDown() {
    if (harness != null) {
      harness.close();
    }
  }

  @Test
  void killMinus9MidStreamLosesAndDoublesNothing() {
    Effects effects = backlog("batch-kill");
    String group = unique("g");
    try (ChildJvm child = victim(List.of(BATCH, "-Xmx256m"), group, effects)) {
      await("the victim applied part of the backlog").atMost(TIMEOUT).pollInterval(Duration.ofMillis(5))
          .until(() -> effects.total() >= MESSAGES / 10);
      child.kill();
    }
    assertThat(effects.total()).as("killed mid-stream").isLessThan(MESSAGES);
    assertThat(rowsPerTransaction(effects)).as("the victim ran batches").isGreaterThan(1.0);
    survive(effects, group);
  }

  @Test
  void haltAfterABatchCommittedBeforeItsSessionIsAckedAsDuplicates() {
    Effects effects = backlog("batch-halt");
    String group = unique("g");
    String crashedKey;
    try (ChildJvm child = victim(List.of(BATCH, "-Xmx256m", "-Didem.crash.point=AFTER_COMMIT",
        "-Didem.crash.after=25"), group, effects)) {
      assertThat(child.waitFor(TIMEOUT)).isEqualTo(CrashInjector.EXIT_STATUS);
      crashedKey = child.lines().stream().filter(l -> l.startsWith("IDEM-CRASH ")).findFirst().orElseThrow()
          .split(" ")[2];
    }
    assertThat(effects.count(crashedKey)).as("committed before the crash").isEqualTo(1);
    assertThat(rowsPerTransaction(effects)).as("the victim ran batches").isGreaterThan(1.0);
    OutcomeRecorder outcomes = survive(effects, group);
    assertThat(outcomes.count(crashedKey, ProcessingOutcome.DUPLICATE)).isEqualTo(1);
  }

  private Effects backlog(String prefix) {
    harness = new JmsHarness(unique(prefix), b -> b.concurrency(1).maxBatchSize(10));
    for (int i = 0; i < MESSAGES; i++) {
      harness.publish(Map.of("idempotency-key", "c-" + i), "{}".getBytes(StandardCharsets.UTF_8));
    }
    JmsTestDatabase.store(); // the processed-events table exists before the child starts
    return Effects.newRun();
  }

  private ChildJvm victim(List<String> jvmArgs, String group, Effects effects) {
    PostgresFixture pg = PostgresFixture.shared();
    return ChildJvm.start("victim", JmsCrashVictim.class, jvmArgs,
        List.of(harness.artemis.url(), harness.queue, harness.deadLetterQueue, JmsTestDatabase.schema(), group,
            effects.run),
        Map.of("IDEM_POSTGRES_URL", pg.jdbcUrl(), "IDEM_POSTGRES_USER", pg.user(),
            "IDEM_POSTGRES_PASSWORD", pg.password(), "IDEM_TESTCONTAINERS", "false"),
        line -> { });
  }

  /** A consumer in batch mode finishes the queue; every effect exactly once. */
  private OutcomeRecorder survive(Effects effects, String group) {
    OutcomeRecorder outcomes = new OutcomeRecorder();
    BrokerConsumer restarted = harness.newConsumer(pipeline(group,
        (message, session) -> effects.record(session, message.header("idempotency-key")), attempts(5), outcomes));
    restarted.start();
    try {
      await("all effects").atMost(TIMEOUT).until(() -> effects.total() >= MESSAGES);
      await("all settled").atMost(TIMEOUT).until(() -> harness.pendingCount() == 0);
    } finally {
      restarted.close();
    }
    assertThat(effects.doubled()).as("doubled").isZero();
    List<String> missing = new ArrayList<>();
    for (int i = 0; i < MESSAGES; i++) {
      if (effects.count("c-" + i) != 1) {
        missing.add("c-" + i);
      }
    }
    assertThat(missing).as("missing or doubled").isEmpty();
    assertThat(effects.total()).isEqualTo(MESSAGES);
    assertThat(harness.deadLetters()).isEmpty();
    return outcomes;
  }

  /** Effect rows per writing transaction ({@code xmin}): above 1 only when batches ran. */
  private static double rowsPerTransaction(Effects effects) {
    try (Connection c = JmsTestDatabase.dataSource().getConnection();
        PreparedStatement ps = c.prepareStatement(
            "SELECT count(*)::float / count(DISTINCT xmin::text) FROM jms_effects WHERE run_id = ?")) {
      ps.setString(1, effects.run);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getDouble(1);
      }
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }
}
