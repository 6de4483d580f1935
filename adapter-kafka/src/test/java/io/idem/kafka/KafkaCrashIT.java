package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.fixtures.ChildJvm;
import io.idem.fixtures.PostgresFixture;
import io.idem.testkit.CrashInjector;
import io.idem.testkit.CrashPoint;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A consumer killed mid-flight (the JVM halts itself, like {@code kill -9}) and restarted leaves
 * every event applied exactly once and no offset lag: the database transaction and the offset
 * commit may be torn apart by the crash, and the processed-events marker makes up for it.
 */
class KafkaCrashIT extends KafkaITSupport {
  private static final int KEYS = 250;
  private static final int DUPLICATES = 50;

  @Override
  protected int partitions() {
    return 3;
  }

  @Test
  void crashAfterTheHandlerWroteButBeforeTheCommit() {
    crashAndRecover(CrashPoint.AFTER_HANDLER);
  }

  @Test
  void crashAfterTheDatabaseCommitButBeforeTheOffsetCommit() {
    crashAndRecover(CrashPoint.AFTER_COMMIT);
  }

  @Test
  void crashInsideTheOffsetCommitAfterTheBrokerTookIt() {
    crashAndRecover(CrashPoint.DURING_ACK);
  }

  @Test
  void crashAfterTheHandlersOfABatchWroteButBeforeItsCommit() {
    crashAndRecover(CrashPoint.AFTER_HANDLER, 20);
  }

  @Test
  void crashAfterTheDatabaseCommitOfABatchButBeforeItsOffsetCommit() {
    crashAndRecover(CrashPoint.AFTER_COMMIT, 20);
  }

  @Test
  void crashAfterTheDatabaseCommitOfABatchOnOneOfTwoWorkers() {
    crashAndRecover(CrashPoint.AFTER_COMMIT, 20, 2);
  }

  private void crashAndRecover(CrashPoint point) {
    crashAndRecover(point, 1);
  }

  private void crashAndRecover(CrashPoint point, int batch) {
    crashAndRecover(point, batch, 1);
  }

  /** {@code batch}, {@code concurrency}: the consumer's maxBatchSize (1: per-message mode) and concurrency. */
  private void crashAndRecover(CrashPoint point, int batch, int concurrency) {
    for (int i = 0; i < KEYS; i++) {
      publish(i % 3, "e-" + i, "{\"n\":" + i + "}");
      if (i % (KEYS / DUPLICATES) == 0) {
        publish((i + 1) % 3, "e-" + i, "{\"n\":" + i + "}"); // a redelivered copy on another partition
      }
    }

    String crashedKey;
    try (ChildJvm victim = child("victim", point, batch, concurrency)) {
      int status = victim.waitFor(Duration.ofSeconds(90));
      assertThat(status).isEqualTo(CrashInjector.EXIT_STATUS);
      String line = victim.lines().stream().filter(l -> l.startsWith("IDEM-CRASH " + point + " "))
          .findFirst().orElseThrow(() -> new AssertionError("no IDEM-CRASH line: " + victim.lines()));
      crashedKey = line.substring(("IDEM-CRASH " + point + " ").length()).trim();
    }
    if (point == CrashPoint.DURING_ACK) {
      // it landed inside the consumer's commitSync, once the broker had taken the offsets
      assertThat(crashedKey).isEqualTo("commitSync");
    } else {
      // the crash tore the two commits apart exactly where intended
      assertThat(effects.count(crashedKey)).isEqualTo(point == CrashPoint.AFTER_COMMIT ? 1 : 0);
    }
    int appliedBeforeRestart = effects.total();
    assertThat(appliedBeforeRestart).isBetween(1, KEYS - 1);
    assertThat(lag()).isPositive();

    try (ChildJvm survivor = child("survivor", null, batch, concurrency)) {
      await("every event applied").atMost(TIMEOUT).until(() -> effects.distinctKeys() == KEYS);
      awaitSettled();
      assertThat(survivor.isAlive()).isTrue();
    }
    assertThat(effects.total()).isEqualTo(KEYS);
    assertThat(effects.doubled()).isZero();
    for (int i = 0; i < KEYS; i++) {
      assertThat(effects.count("e-" + i)).as("effects of e-" + i).isEqualTo(1);
    }
    assertThat(lag()).isZero();
  }

  private ChildJvm child(String name, CrashPoint point, int batch, int concurrency) {
    PostgresFixture postgres = PostgresFixture.shared();
    List<String> jvmArgs = new ArrayList<>(List.of(
        "-Xmx256m",
        "-Didem.test.bootstrap=" + KafkaTestClients.bootstrap(),
        "-Didem.test.topic=" + topic,
        "-Didem.test.group=" + group,
        "-Didem.test.jdbc-url=" + postgres.jdbcUrl(),
        "-Didem.test.jdbc-user=" + postgres.user(),
        "-Didem.test.jdbc-password=" + postgres.password(),
        "-Didem.test.schema=" + dataSource.getSchema(),
        "-Didem.test.batch=" + batch,
        "-Didem.test.concurrency=" + concurrency));
    if (point != null) {
      jvmArgs.add("-Didem.crash.point=" + point.name());
      // DURING_ACK passes once per offset commit, the others once per record
      jvmArgs.add("-Didem.crash.after=" + (point == CrashPoint.DURING_ACK ? 1 : 60));
      jvmArgs.add("-Didem.crash.broker-calls=intercepted");
    }
    return ChildJvm.start(name, KafkaCrashChild.class, jvmArgs, List.of(), Map.of(), System.out::println);
  }
}
