package io.idem.jms;

import static io.idem.jms.JmsTestDatabase.unique;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import io.idem.IdempotencyKey;
import io.idem.KeySource;
import io.idem.fixtures.ArtemisFixture.AddressPolicy;
import io.idem.fixtures.ChildJvm;
import io.idem.fixtures.PostgresFixture;
import io.idem.jms.JmsTestDatabase.Effects;
import io.idem.testkit.DeadLetteredMessage;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A message whose handler kills the process (issue 23, docs/FAILURES.md "Attempts that survive
 * the process") on ActiveMQ Artemis: each death raises {@code JMSXDeliveryCount} of the poison and
 * of every message prefetched with it, and the broker's {@code max-delivery-attempts} (10 here)
 * would move them all to the dead-letter queue without Idem's reason. The consumer runs in a child
 * JVM that halts in the poison's handler while the broker (in this JVM) outlives it; the test
 * restarts the child until the poison is in Idem's dead-letter queue with MAX_ATTEMPTS_EXCEEDED —
 * after exactly maxAttempts deaths — and the messages behind it are applied once each, none
 * dead-lettered. In both session modes, one message at a time and in batches. The OutOfMemoryError
 * variant ends the consumer's worker while the JVM lives on; the child replaces the consumer.
 */
class JmsProcessKillingMessageIT {
  private static final int GOOD = 4;
  private static final String POISON = "poison";
  private static final Duration CHILD_LIFE = Duration.ofSeconds(90);
  private JmsHarness harness;

  @TempDir
  Path temp;

  @AfterEach
  void tearDown() {
    if (harness != null) {
      harness.close();
    }
  }

  static Stream<Arguments> modes() {
    return Stream.of(
        Arguments.of(JmsSessionMode.TRANSACTED, 1),
        Arguments.of(JmsSessionMode.CLIENT_ACKNOWLEDGE, 1),
        Arguments.of(JmsSessionMode.TRANSACTED, 10),
        Arguments.of(JmsSessionMode.CLIENT_ACKNOWLEDGE, 10));
  }

  @ParameterizedTest(name = "{0}, maxBatchSize {1}")
  @MethodSource("modes")
  void aHandlerThatHaltsTheJvmIsDeadLetteredAfterMaxAttemptsDeaths(JmsSessionMode mode, int batch) throws Exception {
    harness = new JmsHarness(unique("poison-halt"), b -> b);
    publish();
    Effects effects = Effects.newRun();
    String group = unique("g");
    haltUntilDeadLettered(group, effects, mode, batch, "");
    assertOutcome(effects, group);
  }

  /**
   * max-delivery-attempts 4, one above maxAttempts: after the poison's 3 deaths the messages
   * prefetched with it arrive on the broker's last delivery. One of them fails its first run: a
   * rollback would let Artemis move it without a reason, and dead-lettering it at the broker's
   * limit would charge it with the poison's deaths, so it is retried in its session and applied.
   */
  @ParameterizedTest(name = "{0}, maxBatchSize {1}")
  @MethodSource("lastDeliveryModes")
  void aNeighbourFailingOnTheBrokersLastDeliveryIsRetriedInItsSession(JmsSessionMode mode, int batch)
      throws Exception {
    String queue = unique("poison-limit");
    // the broker's own dead letters go to Idem's dead-letter queue too: the assertions see them
    harness = new JmsHarness(queue,
        AddressPolicy.deadLetterTo(queue + ".dlq").withMaxDeliveryAttempts(JmsPoisonChild.MAX_ATTEMPTS + 1), b -> b);
    publish();
    Effects effects = Effects.newRun();
    String group = unique("g");
    List<String> last = haltUntilDeadLettered(group, effects, mode, batch, "good-2");
    assertThat(last).as("good-2 failed once on the broker's last delivery, then ran again")
        .filteredOn(l -> l.contains("FLAKY-RUN")).hasSize(2);
    assertThat(last).anyMatch(l -> l.contains("OUTCOME good-2 RETRY"));
    assertOutcome(effects, group);
  }

  static Stream<Arguments> lastDeliveryModes() {
    return Stream.of(
        Arguments.of(JmsSessionMode.TRANSACTED, 1),
        Arguments.of(JmsSessionMode.CLIENT_ACKNOWLEDGE, 1),
        Arguments.of(JmsSessionMode.TRANSACTED, 10));
  }

  /**
   * Starts the child until the poison is dead-lettered, asserting exactly maxAttempts deaths.
   *
   * @return the lines of the last child
   */
  private List<String> haltUntilDeadLettered(String group, Effects effects, JmsSessionMode mode, int batch,
      String flaky) throws Exception {
    Path stop = temp.resolve("stop");
    int deaths = 0;
    for (int start = 1; ; start++) {
      assertThat(start).as("child starts (deaths so far %d)", deaths).isLessThanOrEqualTo(JmsPoisonChild.MAX_ATTEMPTS + 1);
      try (ChildJvm child = startChild("poison-" + start, "HALT", group, effects, stop, mode, batch, flaky)) {
        await("child " + start + " dies in the poison's handler, or settles everything")
            .atMost(CHILD_LIFE).pollInterval(Duration.ofMillis(100))
            .until(() -> !child.isAlive() || aGoodOneWasDeadLettered(child)
                || (effects.total() == GOOD && child.printed("OUTCOME " + POISON + " DEAD_LETTERED")));
        if (!child.isAlive()) {
          assertThat(child.waitFor(Duration.ofSeconds(10))).as("halted by the poison").isEqualTo(1);
          assertThat(child.printed("POISON-RUN")).isTrue();
          deaths++;
          continue;
        }
        assertThat(child.printed("POISON-RUN")).as("not run once its attempts are spent").isFalse();
        Files.createFile(stop);
        assertThat(child.waitFor(CHILD_LIFE)).isZero();
        assertThat(deaths).as("deaths before Idem dead-lettered it").isEqualTo(JmsPoisonChild.MAX_ATTEMPTS);
        return child.lines();
      }
    }
  }

  @ParameterizedTest
  @EnumSource(JmsSessionMode.class)
  void anOutOfMemoryErrorThatEndsTheWorkerCountsAsAnAttempt(JmsSessionMode mode) throws Exception {
    harness = new JmsHarness(unique("poison-oom"), b -> b);
    publish();
    Effects effects = Effects.newRun();
    String group = unique("g");
    Path stop = temp.resolve("stop-oom");
    try (ChildJvm child = startChild("poison-oom", "OOM", group, effects, stop, mode, 1, "")) {
      await("the poison dead-lettered and the others applied").atMost(CHILD_LIFE.multipliedBy(2))
          .pollInterval(Duration.ofMillis(100))
          .until(() -> !child.isAlive()
              || (effects.total() == GOOD && child.printed("OUTCOME " + POISON + " DEAD_LETTERED")));
      assertThat(child.isAlive()).as("the JVM lives on").isTrue();
      Files.createFile(stop);
      assertThat(child.waitFor(CHILD_LIFE)).isZero();
      long runs = child.lines().stream().filter(l -> l.contains("POISON-RUN")).count();
      assertThat(runs).as("handler runs of the poison").isEqualTo(JmsPoisonChild.MAX_ATTEMPTS);
    }
    assertOutcome(effects, group);
  }

  /** Ends a wait early: the assertions then say which one. */
  private static boolean aGoodOneWasDeadLettered(ChildJvm child) {
    return child.lines().stream().anyMatch(l -> l.matches(".*OUTCOME good-\\d+ DEAD_LETTERED.*"));
  }

  private ChildJvm startChild(String name, String poison, String group, Effects effects, Path stop,
      JmsSessionMode mode, int batch, String flaky) {
    JmsTestDatabase.store(); // the tables exist before the child starts
    PostgresFixture pg = PostgresFixture.shared();
    return ChildJvm.start(name, JmsPoisonChild.class,
        List.of("-Xmx256m", "-Didem.poison=" + poison, "-Didem.flaky=" + flaky),
        List.of(harness.artemis.url(), harness.queue, harness.deadLetterQueue, JmsTestDatabase.schema(), group,
            effects.run, stop.toString(), POISON, mode.name(), Integer.toString(batch)),
        Map.of("IDEM_POSTGRES_URL", pg.jdbcUrl(), "IDEM_POSTGRES_USER", pg.user(),
            "IDEM_POSTGRES_PASSWORD", pg.password(), "IDEM_TESTCONTAINERS", "false"),
        System.out::println);
  }

  private void assertOutcome(Effects effects, String group) {
    for (int i = 1; i <= GOOD; i++) {
      assertThat(effects.count("good-" + i)).as("effects of good-%d", i).isEqualTo(1);
    }
    assertThat(effects.count(POISON)).isZero();
    assertThat(effects.doubled()).isZero();
    List<DeadLetteredMessage> dead = harness.deadLetters();
    assertThat(dead).as("only the poison, with Idem's reason").hasSize(1);
    assertThat(dead.get(0).headers().get(DeadLetterReason.HEADER_KEY)).isEqualTo(POISON);
    assertThat(dead.get(0).cause()).isEqualTo(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED.name());
    assertThat(dead.get(0).headers().get(DeadLetterReason.HEADER_DETAIL)).contains("the process died");
    assertThat(harness.pendingCount()).isZero();
    assertThat(JmsTestDatabase.store().attempts(new IdempotencyKey(group, POISON, KeySource.HEADER)))
        .as("the count went with the dead letter").isZero();
  }

  /** The poison first, the good messages behind it (prefetched with it). */
  private void publish() {
    harness.publish(Map.of("idempotency-key", POISON), "{\"poison\":true}".getBytes(StandardCharsets.UTF_8));
    for (int i = 1; i <= GOOD; i++) {
      harness.publish(Map.of("idempotency-key", "good-" + i), ("{\"n\":" + i + "}").getBytes(StandardCharsets.UTF_8));
    }
  }
}
