package io.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import io.idem.IdempotencyKey;
import io.idem.KeySource;
import io.idem.fixtures.ChildJvm;
import io.idem.fixtures.PostgresFixture;
import io.idem.fixtures.RabbitFixture;
import io.idem.testkit.DeadLetteredMessage;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A message whose handler kills the process (issue 23, docs/FAILURES.md "Attempts that survive
 * the process"): on a classic queue RabbitMQ only flags the redelivery, on a quorum queue its
 * counter also counts the messages prefetched with the poison at each death. The consumer runs in
 * a child JVM that halts in the poison's handler; the test restarts it until the poison is in
 * Idem's dead-letter queue with MAX_ATTEMPTS_EXCEEDED — after at most maxAttempts deaths — and the
 * messages behind it are applied once each, none dead-lettered. The OutOfMemoryError variant
 * stops the consumer while the JVM lives on; the child replaces it.
 */
class RabbitProcessKillingMessageIT {
  private static final int GOOD = 4;
  private static final Duration CHILD_LIFE = Duration.ofSeconds(90);

  @TempDir
  Path temp;

  @ParameterizedTest
  @EnumSource(RabbitQueueType.class)
  void aHandlerThatHaltsTheJvmIsDeadLetteredAfterMaxAttemptsDeaths(RabbitQueueType type) throws Exception {
    try (TestQueue queue = TestQueue.declare("poison-halt", type);
        TestDatabase db = TestDatabase.fresh("rabbit_poison_halt")) {
      String group = "poison-" + queue.name.substring(queue.name.length() - 8);
      publish(queue);
      Path stop = temp.resolve("stop");
      List<String> args = List.of(queue.name, type.name(), db.schema, group, stop.toString(), "HALT", "poison");
      int deaths = 0;
      for (int start = 1; ; start++) {
        assertThat(start).as("child starts (deaths so far %d)", deaths)
            .isLessThanOrEqualTo(RabbitPoisonChild.MAX_ATTEMPTS + 1);
        try (ChildJvm child = ChildJvm.start("poison-" + start, RabbitPoisonChild.class,
            List.of("-Xmx256m"), args, childEnv(), System.out::println)) {
          await("child " + start + " dies in the poison's handler, or settles everything")
              .atMost(CHILD_LIFE).pollInterval(Duration.ofMillis(100))
              .until(() -> !child.isAlive() || (db.totalEffects() == GOOD && child.printed("OUTCOME poison DEAD_LETTERED")));
          if (!child.isAlive()) {
            assertThat(child.waitFor(Duration.ofSeconds(10))).as("halted by the poison").isEqualTo(1);
            assertThat(child.printed("POISON-RUN")).isTrue();
            deaths++;
            continue;
          }
          assertThat(child.printed("POISON-RUN")).as("not run once its attempts are spent").isFalse();
          Files.createFile(stop);
          assertThat(child.waitFor(CHILD_LIFE)).isZero();
          break;
        }
      }
      assertThat(deaths).as("deaths before Idem dead-lettered it").isEqualTo(RabbitPoisonChild.MAX_ATTEMPTS);
      assertOutcome(queue, db, group);
    }
  }

  @ParameterizedTest
  @EnumSource(RabbitQueueType.class)
  void anOutOfMemoryErrorThatStopsTheConsumerCountsAsAnAttempt(RabbitQueueType type) throws Exception {
    try (TestQueue queue = TestQueue.declare("poison-oom", type);
        TestDatabase db = TestDatabase.fresh("rabbit_poison_oom")) {
      String group = "poison-oom-" + queue.name.substring(queue.name.length() - 8);
      publish(queue);
      Path stop = temp.resolve("stop-oom");
      List<String> args = List.of(queue.name, type.name(), db.schema, group, stop.toString(), "OOM", "poison");
      try (ChildJvm child = ChildJvm.start("poison-oom", RabbitPoisonChild.class,
          List.of("-Xmx256m"), args, childEnv(), System.out::println)) {
        await("the poison dead-lettered and the others applied").atMost(CHILD_LIFE.multipliedBy(2))
            .pollInterval(Duration.ofMillis(100))
            .until(() -> !child.isAlive()
                || (db.totalEffects() == GOOD && child.printed("OUTCOME poison DEAD_LETTERED")));
        assertThat(child.isAlive()).as("the JVM lives on").isTrue();
        Files.createFile(stop);
        assertThat(child.waitFor(CHILD_LIFE)).isZero();
        long runs = child.lines().stream().filter(l -> l.contains("POISON-RUN")).count();
        assertThat(runs).as("handler runs of the poison").isEqualTo(RabbitPoisonChild.MAX_ATTEMPTS);
      }
      assertOutcome(queue, db, group);
    }
  }

  private static void assertOutcome(TestQueue queue, TestDatabase db, String group) {
    for (int i = 1; i <= GOOD; i++) {
      assertThat(db.effects("good-" + i)).as("effects of good-%d", i).isEqualTo(1);
    }
    assertThat(db.effects("poison")).isZero();
    List<DeadLetteredMessage> dead = queue.deadLetters();
    assertThat(dead).as("only the poison, with Idem's reason").hasSize(1);
    assertThat(dead.get(0).headers().get(DeadLetterReason.HEADER_KEY)).isEqualTo("poison");
    assertThat(dead.get(0).cause()).isEqualTo(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED.name());
    assertThat(dead.get(0).headers().get(DeadLetterReason.HEADER_DETAIL)).contains("the process died");
    assertThat(queue.ready()).isZero();
    assertThat(db.store.attempts(new IdempotencyKey(group, "poison", KeySource.HEADER)))
        .as("the count went with the dead letter").isZero();
  }

  /** The poison first, the good messages behind it (prefetched with it). */
  private static void publish(TestQueue queue) {
    queue.publish("poison", "{\"poison\":true}");
    for (int i = 1; i <= GOOD; i++) {
      queue.publish("good-" + i, "{\"n\":" + i + "}");
    }
  }

  private static Map<String, String> childEnv() {
    return Map.of(
        "IDEM_RABBITMQ_URI", RabbitFixture.shared().uri(),
        "IDEM_POSTGRES_URL", PostgresFixture.shared().jdbcUrl(),
        "IDEM_POSTGRES_USER", PostgresFixture.shared().user(),
        "IDEM_POSTGRES_PASSWORD", PostgresFixture.shared().password());
  }
}
