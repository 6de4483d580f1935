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
import io.idem.testkit.CrashPoint;
import io.idem.testkit.OutcomeRecorder;
import io.idem.testkit.OutcomeRecorder.Settled;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A consumer in a child JVM halts itself (like kill -9) mid-flight; a restarted consumer then
 * finishes the queue, and every effect exists exactly once. The central case is
 * {@link CrashPoint#AFTER_COMMIT}: the database committed, the JMS session did not, so the broker
 * redelivers a message whose effect already exists, and the store skips it as a duplicate.
 */
class JmsCrashIT {
  private static final int MESSAGES = 10;
  private static final Duration TIMEOUT = Duration.ofSeconds(60);
  private JmsHarness harness;

  @AfterEach
  void tearDown() {
    if (harness != null) {
      harness.close();
    }
  }

  @ParameterizedTest
  @EnumSource(value = CrashPoint.class, names = {"AFTER_COMMIT", "AFTER_HANDLER", "DURING_ACK"})
  void crashMidFlightLeavesEveryEffectExactlyOnce(CrashPoint point) {
    harness = new JmsHarness(unique("crash"), b -> b.concurrency(1));
    for (int i = 0; i < MESSAGES; i++) {
      harness.publish(Map.of("idempotency-key", "c-" + i), ("{\"n\":" + i + "}").getBytes(StandardCharsets.UTF_8));
    }
    JmsTestDatabase.store(); // the processed-events table exists before the child starts
    Effects effects = Effects.newRun();
    String group = unique("g");
    PostgresFixture pg = PostgresFixture.shared();

    String crashedKey;
    try (ChildJvm child = ChildJvm.start("victim-" + point, JmsCrashVictim.class,
        List.of("-Didem.crash.point=" + point, "-Didem.crash.after=3", "-Xmx256m",
            "-Didem.crash.broker-calls=intercepted"),
        List.of(harness.artemis.url(), harness.queue, harness.deadLetterQueue,
            JmsTestDatabase.schema(), group, effects.run),
        Map.of("IDEM_POSTGRES_URL", pg.jdbcUrl(), "IDEM_POSTGRES_USER", pg.user(),
            "IDEM_POSTGRES_PASSWORD", pg.password(), "IDEM_TESTCONTAINERS", "false"),
        System.out::println)) {
      assertThat(child.waitFor(TIMEOUT)).as("exit status of a planned crash").isEqualTo(CrashInjector.EXIT_STATUS);
      String line = child.lines().stream().filter(l -> l.startsWith("IDEM-CRASH ")).findFirst().orElseThrow();
      crashedKey = line.split(" ")[2];
    }
    if (point == CrashPoint.DURING_ACK) {
      // it landed inside the session's commit, once the broker had taken it
      assertThat(crashedKey).isEqualTo("commit");
    } else if (point == CrashPoint.AFTER_COMMIT) {
      assertThat(effects.count(crashedKey)).as("committed before the crash").isEqualTo(1);
    } else if (point == CrashPoint.AFTER_HANDLER) {
      assertThat(effects.count(crashedKey)).as("rolled back by the crash").isZero();
    }

    OutcomeRecorder outcomes = new OutcomeRecorder();
    BrokerConsumer restarted = harness.newConsumer(pipeline(group,
        (message, session) -> effects.record(session, message.header("idempotency-key")), attempts(5), outcomes));
    restarted.start();
    await().atMost(TIMEOUT).untilAsserted(() -> assertThat(effects.total()).isEqualTo(MESSAGES));
    restarted.close();

    assertThat(harness.pendingCount()).isZero();
    assertThat(effects.doubled()).isZero();
    for (int i = 0; i < MESSAGES; i++) {
      assertThat(effects.count("c-" + i)).as("c-" + i).isEqualTo(1);
    }
    List<Settled> crashed = outcomes.settled().stream().filter(s -> crashedKey.equals(s.key())).toList();
    if (point == CrashPoint.AFTER_COMMIT) {
      // redelivered (JMSXDeliveryCount counts the crashed delivery) and skipped
      assertThat(crashed).hasSize(1);
      assertThat(crashed.get(0).outcome()).isEqualTo(ProcessingOutcome.DUPLICATE);
      assertThat(crashed.get(0).attempt()).isGreaterThanOrEqualTo(2);
    } else if (point == CrashPoint.AFTER_HANDLER) {
      assertThat(crashed).extracting(Settled::outcome).containsExactly(ProcessingOutcome.PROCESSED);
    }
    assertThat(harness.deadLetters()).isEmpty();
  }

  /**
   * CLIENT_ACKNOWLEDGE on Artemis, the victim halted once the dead-letter copy of a keyed message
   * was sent and before {@code acknowledge()}: the redelivered original is dead-lettered again from
   * the store's recorded decision without running the handler (which would now apply it), and the
   * copy sent again carries the same {@code _AMQ_DUPL_ID}, so Artemis keeps one copy.
   */
  @Test
  void aDeadLetterCopySentBeforeTheCrashIsNotHandledNorStoredTwice() throws Exception {
    harness = new JmsHarness(unique("crash-dl"),
        b -> b.concurrency(1).sessionMode(JmsSessionMode.CLIENT_ACKNOWLEDGE));
    harness.publish(Map.of("idempotency-key", "poison-1", "x-fail", "non-retryable"),
        "{}".getBytes(StandardCharsets.UTF_8));
    JmsTestDatabase.store();
    Effects effects = Effects.newRun();
    String group = unique("g");
    PostgresFixture pg = PostgresFixture.shared();
    try (ChildJvm child = ChildJvm.start("victim-dead-letter", JmsCrashVictim.class,
        List.of("-Didem.crash.point=" + CrashPoint.DEAD_LETTER_COPY_STORED, "-Didem.crash.after=0",
            "-Xmx256m", "-Didem.crash.broker-calls=intercepted", "-Didem.jms.sessionMode=CLIENT_ACKNOWLEDGE"),
        List.of(harness.artemis.url(), harness.queue, harness.deadLetterQueue,
            JmsTestDatabase.schema(), group, effects.run),
        Map.of("IDEM_POSTGRES_URL", pg.jdbcUrl(), "IDEM_POSTGRES_USER", pg.user(),
            "IDEM_POSTGRES_PASSWORD", pg.password(), "IDEM_TESTCONTAINERS", "false"),
        System.out::println)) {
      assertThat(child.waitFor(TIMEOUT)).as("exit status of a planned crash").isEqualTo(CrashInjector.EXIT_STATUS);
      assertThat(child.lines()).as("halted once the copy was sent")
          .contains("IDEM-CRASH DEAD_LETTER_COPY_STORED send");
    }
    assertThat(harness.deadLetters()).as("the copy stored before the crash").hasSize(1);

    OutcomeRecorder outcomes = new OutcomeRecorder();
    BrokerConsumer restarted = harness.newConsumer(pipeline(group,
        (message, session) -> effects.record(session, message.header("idempotency-key")), attempts(5), outcomes));
    restarted.start();
    await().atMost(TIMEOUT).until(() -> !outcomes.settled().isEmpty());
    restarted.close();

    assertThat(outcomes.settled()).extracting(Settled::outcome).containsExactly(ProcessingOutcome.DEAD_LETTERED);
    assertThat(effects.count("poison-1")).as("never handled after the crash").isZero();
    assertThat(harness.pendingCount()).isZero();
    List<jakarta.jms.Message> copies = harness.rawDeadLetters();
    assertThat(copies).as("Artemis dropped the copy sent again").hasSize(1);
    assertThat(copies.get(0).getStringProperty(JmsAcknowledgement.ARTEMIS_DUPLICATE_ID))
        .isEqualTo(copies.get(0).getStringProperty("idem_original_message_id"));
    assertThat(harness.deadLetters().get(0).cause()).isEqualTo("NON_RETRYABLE");
  }
}
