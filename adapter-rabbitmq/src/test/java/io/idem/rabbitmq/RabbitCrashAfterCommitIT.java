package io.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.fixtures.ChildJvm;
import io.idem.fixtures.PostgresFixture;
import io.idem.fixtures.RabbitFixture;
import io.idem.testkit.CrashInjector;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A consumer JVM halted (like kill -9) after the transaction committed but before the ack: the
 * broker redelivers the unacked message to the next consumer, which sees the committed marker and
 * acks it as a duplicate — one effect per key.
 */
class RabbitCrashAfterCommitIT {
  private static final int MESSAGES = 5;

  @TempDir
  Path temp;

  @ParameterizedTest
  @EnumSource(RabbitQueueType.class)
  void haltAfterCommitBeforeAckIsRedeliveredAndAppliedOnce(RabbitQueueType type) throws Exception {
    try (TestQueue queue = TestQueue.declare("crash", type);
        TestDatabase db = TestDatabase.fresh("rabbit_crash")) {
      String group = "crash-" + queue.name.substring(queue.name.length() - 8);
      publishAll(queue);
      Path stop = temp.resolve("stop");
      List<String> args = List.of(queue.name, type.name(), db.schema, group, stop.toString());
      Map<String, String> env = childEnv();

      String crashedKey;
      try (ChildJvm victim = ChildJvm.start("victim", RabbitCrashChild.class,
          List.of("-Xmx256m", "-Didem.crash.point=AFTER_COMMIT", "-Didem.crash.after=2"),
          args, env, System.out::println)) {
        assertThat(victim.waitFor(Duration.ofSeconds(60))).isEqualTo(CrashInjector.EXIT_STATUS);
        String line = victim.lines().stream().filter(l -> l.startsWith("IDEM-CRASH AFTER_COMMIT "))
            .findFirst().orElseThrow(() -> new AssertionError("no planned crash: " + victim.lines()));
        crashedKey = line.substring("IDEM-CRASH AFTER_COMMIT ".length()).trim();
        // committed, never acked
        assertThat(db.effects(crashedKey)).isEqualTo(1);
        assertThat(db.processed(group, crashedKey)).isTrue();
        assertThat(victim.printed("OUTCOME " + crashedKey)).isFalse();
      }

      try (ChildJvm survivor = ChildJvm.start("survivor", RabbitCrashChild.class,
          List.of("-Xmx256m"), args, env, System.out::println)) {
        await("redelivery of " + crashedKey + " acked as a duplicate").atMost(Duration.ofSeconds(60))
            .until(() -> survivor.printed("OUTCOME " + crashedKey + " DUPLICATE 2"));
        await("all effects").atMost(Duration.ofSeconds(60)).until(() -> db.totalEffects() == MESSAGES);
        Files.createFile(stop);
        assertThat(survivor.waitFor(Duration.ofSeconds(60))).isZero();
        assertThat(survivor.printed("CLOSED")).isTrue();
      }

      List<Integer> perKey = new ArrayList<>();
      for (int i = 1; i <= MESSAGES; i++) {
        perKey.add(db.effects("crash-" + i));
      }
      assertThat(perKey).containsOnly(1);
      assertThat(db.totalEffects()).isEqualTo(MESSAGES);
      assertThat(queue.ready()).isZero();
      assertThat(queue.deadLetters()).isEmpty();
    }
  }

  @ParameterizedTest
  @EnumSource(RabbitQueueType.class)
  void haltInsideTheBasicAckLosesNothingAndAppliesEachOnce(RabbitQueueType type) throws Exception {
    try (TestQueue queue = TestQueue.declare("crash-ack", type);
        TestDatabase db = TestDatabase.fresh("rabbit_crash_ack")) {
      String group = "crash-ack-" + queue.name.substring(queue.name.length() - 8);
      publishAll(queue);
      Path stop = temp.resolve("stop-ack");
      List<String> args = List.of(queue.name, type.name(), db.schema, group, stop.toString());
      Map<String, String> env = childEnv();
      try (ChildJvm victim = ChildJvm.start("victim-ack", RabbitCrashChild.class,
          List.of("-Xmx256m", "-Didem.crash.point=DURING_ACK", "-Didem.crash.after=1",
              "-Didem.crash.broker-calls=intercepted"),
          args, env, System.out::println)) {
        assertThat(victim.waitFor(Duration.ofSeconds(60))).isEqualTo(CrashInjector.EXIT_STATUS);
        // it landed inside the channel's basicAck (the client wrote it), not after the commit
        assertThat(victim.lines()).contains("IDEM-CRASH DURING_ACK basicAck");
      }
      try (ChildJvm survivor = ChildJvm.start("survivor-ack", RabbitCrashChild.class,
          List.of("-Xmx256m"), args, env, System.out::println)) {
        await("all effects").atMost(Duration.ofSeconds(60)).until(() -> db.totalEffects() == MESSAGES);
        Files.createFile(stop);
        assertThat(survivor.waitFor(Duration.ofSeconds(60))).isZero();
      }
      for (int i = 1; i <= MESSAGES; i++) {
        assertThat(db.effects("crash-" + i)).as("effects of crash-%d", i).isEqualTo(1);
      }
      assertThat(queue.ready()).isZero();
      assertThat(queue.deadLetters()).isEmpty();
    }
  }

  private static void publishAll(TestQueue queue) {
    for (int i = 1; i <= MESSAGES; i++) {
      queue.publish("crash-" + i, "{\"n\":" + i + "}");
    }
  }

  /** The children use the very servers this JVM resolved. */
  private static Map<String, String> childEnv() {
    return Map.of(
        "IDEM_RABBITMQ_URI", RabbitFixture.shared().uri(),
        "IDEM_POSTGRES_URL", PostgresFixture.shared().jdbcUrl(),
        "IDEM_POSTGRES_USER", PostgresFixture.shared().user(),
        "IDEM_POSTGRES_PASSWORD", PostgresFixture.shared().password());
  }
}
