package io.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.fixtures.ChildJvm;
import io.idem.fixtures.PostgresFixture;
import io.idem.fixtures.RabbitFixture;
import io.idem.testkit.CrashInjector;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A consumer JVM in batch mode ({@code maxBatchSize} 10) killed while it works through a backlog:
 * whatever it committed and did not ack comes back and is acked as a duplicate, whatever it had
 * not committed is applied by the next consumer — 0 doubled, 0 missing.
 */
class RabbitBatchCrashIT {
  private static final int MESSAGES = 200;
  private static final String BATCH = "-Didem.rabbit.maxBatchSize=10";

  @TempDir
  Path temp;

  @Test
  void killMinus9MidStreamLosesAndDoublesNothing() throws Exception {
    try (TestQueue queue = TestQueue.declare("batch-kill", RabbitQueueType.QUORUM);
        TestDatabase db = TestDatabase.fresh("rabbit_batch_crash")) {
      publishBacklog(queue);
      List<String> args = args(queue, db);
      try (ChildJvm victim = ChildJvm.start("victim", RabbitCrashChild.class, List.of("-Xmx256m", BATCH),
          args, env(), line -> { })) {
        await("the victim applied part of the backlog").atMost(Duration.ofSeconds(120))
            .pollInterval(Duration.ofMillis(5)).until(() -> db.totalEffects() >= MESSAGES / 10);
        victim.kill();
      }
      int atKill = db.totalEffects();
      assertThat(atKill).as("killed mid-stream").isLessThan(MESSAGES);
      assertThat(rowsPerTransaction(db)).as("the victim ran batches").isGreaterThan(1.0);
      survive(queue, db, args);
    }
  }

  @Test
  void haltAfterABatchCommittedBeforeItsAcksIsAckedAsDuplicates() throws Exception {
    try (TestQueue queue = TestQueue.declare("batch-halt", RabbitQueueType.QUORUM);
        TestDatabase db = TestDatabase.fresh("rabbit_batch_crash")) {
      publishBacklog(queue);
      List<String> args = args(queue, db);
      String crashedKey;
      try (ChildJvm victim = ChildJvm.start("victim", RabbitCrashChild.class,
          List.of("-Xmx256m", BATCH, "-Didem.crash.point=AFTER_COMMIT", "-Didem.crash.after=25"),
          args, env(), line -> { })) {
        assertThat(victim.waitFor(Duration.ofSeconds(120))).isEqualTo(CrashInjector.EXIT_STATUS);
        String line = victim.lines().stream().filter(l -> l.startsWith("IDEM-CRASH AFTER_COMMIT "))
            .findFirst().orElseThrow(() -> new AssertionError("no planned crash: " + victim.lines()));
        crashedKey = line.substring("IDEM-CRASH AFTER_COMMIT ".length()).trim();
        assertThat(db.effects(crashedKey)).isEqualTo(1); // committed, never acked
        assertThat(victim.printed("OUTCOME " + crashedKey + " ")).isFalse();
      }
      assertThat(rowsPerTransaction(db)).as("the victim ran batches").isGreaterThan(1.0);
      List<String> survivorLines = survive(queue, db, args);
      assertThat(survivorLines).anyMatch(l -> l.startsWith("OUTCOME " + crashedKey + " DUPLICATE"));
    }
  }

  /** Runs a survivor in batch mode until every message is applied; checks the ledger. */
  private List<String> survive(TestQueue queue, TestDatabase db, List<String> args) throws Exception {
    Path stop = Path.of(args.get(4));
    try (ChildJvm survivor = ChildJvm.start("survivor", RabbitCrashChild.class, List.of("-Xmx256m", BATCH),
        args, env(), line -> { })) {
      await("all effects").atMost(Duration.ofSeconds(120)).until(() -> db.totalEffects() >= MESSAGES);
      await("all acked").atMost(Duration.ofSeconds(60)).until(() -> queue.ready() == 0);
      Files.createFile(stop);
      assertThat(survivor.waitFor(Duration.ofSeconds(60))).isZero();
      List<Integer> doubled = new ArrayList<>();
      List<Integer> missing = new ArrayList<>();
      for (int i = 1; i <= MESSAGES; i++) {
        int n = db.effects("k-" + i);
        if (n > 1) {
          doubled.add(i);
        } else if (n == 0) {
          missing.add(i);
        }
      }
      assertThat(doubled).as("doubled").isEmpty();
      assertThat(missing).as("missing").isEmpty();
      assertThat(db.totalEffects()).isEqualTo(MESSAGES);
      assertThat(queue.deadLetters()).isEmpty();
      return survivor.lines();
    }
  }

  private static void publishBacklog(TestQueue queue) throws Exception {
    for (int i = 1; i <= MESSAGES; i++) {
      queue.channel().basicPublish("", queue.name, new com.rabbitmq.client.AMQP.BasicProperties.Builder()
          .deliveryMode(2).messageId("k-" + i).headers(Map.of("idempotency-key", "k-" + i)).build(),
          "{}".getBytes(StandardCharsets.UTF_8));
    }
    queue.channel().waitForConfirmsOrDie(60_000);
  }

  private List<String> args(TestQueue queue, TestDatabase db) {
    String group = "batch-crash-" + queue.name.substring(queue.name.length() - 8);
    return List.of(queue.name, RabbitQueueType.QUORUM.name(), db.schema, group, temp.resolve("stop").toString());
  }

  /** The children use the very servers this JVM resolved. */
  private static Map<String, String> env() {
    return Map.of(
        "IDEM_RABBITMQ_URI", RabbitFixture.shared().uri(),
        "IDEM_POSTGRES_URL", PostgresFixture.shared().jdbcUrl(),
        "IDEM_POSTGRES_USER", PostgresFixture.shared().user(),
        "IDEM_POSTGRES_PASSWORD", PostgresFixture.shared().password());
  }

  /** Effect rows per writing transaction ({@code xmin}): above 1 only when batches ran. */
  private static double rowsPerTransaction(TestDatabase db) throws Exception {
    try (Connection c = db.dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*)::float / count(DISTINCT xmin::text) FROM effects")) {
      rs.next();
      return rs.getDouble(1);
    }
  }
}
