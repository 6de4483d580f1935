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
 * Issue 23, case 5, crash variant: a consumer halted in the middle of a poll's records (the JVM
 * halts itself right after a record's database commit, like {@code kill -9}) redelivers only the
 * records whose offsets waited for the commit interval — at most {@code commitInterval /
 * record time + 2} — not the whole poll's records before it (all 61 here before the fix).
 *
 * <p>The bound holds on any machine: the handler sleeps {@value #RECORD_MS} ms, so at most
 * {@code commitInterval / RECORD_MS} records settle between two commits, plus the one whose
 * settling found the interval passed, plus the record the crash hit. Redelivered records are
 * counted from the effects table and the group's committed offset after the crash (one
 * partition, keys in offset order): applied before the crash minus committed.
 */
class KafkaCommitLagCrashIT extends KafkaITSupport {
  private static final int KEYS = 200;
  private static final int CRASH_AFTER = 60;
  private static final long RECORD_MS = 20;
  private static final long COMMIT_INTERVAL_MS = 100;
  private static final long MAX_REDELIVERED = COMMIT_INTERVAL_MS / RECORD_MS + 2;

  @Test
  void aCrashMidPollRedeliversAtMostTheRecordsOfOneCommitInterval() {
    for (int i = 0; i < KEYS; i++) {
      publish(0, "c-" + i, "{\"n\":" + i + "}");
    }
    try (ChildJvm victim = child("victim", CrashPoint.AFTER_COMMIT)) {
      assertThat(victim.waitFor(Duration.ofSeconds(90))).isEqualTo(CrashInjector.EXIT_STATUS);
    }
    int applied = effects.total();
    // idem.crash.after passes, then the crash: halted right after the database commit of the 61st
    assertThat(applied).isEqualTo(CRASH_AFTER + 1);
    long committed = Math.max(0, committed(0));
    long redelivered = applied - committed;
    System.out.printf("crash after %d records: %d committed, %d to be redelivered (bound %d)%n",
        applied, committed, redelivered, MAX_REDELIVERED);
    assertThat(redelivered).as("records applied but not committed at the crash").isBetween(1L, MAX_REDELIVERED);

    try (ChildJvm survivor = child("survivor", null)) {
      await("every event applied").atMost(TIMEOUT).until(() -> effects.distinctKeys() == KEYS);
      awaitSettled();
      assertThat(survivor.isAlive()).isTrue();
    }
    assertThat(effects.total()).isEqualTo(KEYS);
    assertThat(effects.doubled()).isZero();
  }

  private ChildJvm child(String name, CrashPoint point) {
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
        "-Didem.test.max-poll-records=100",
        "-Didem.test.commit-interval-ms=" + COMMIT_INTERVAL_MS,
        "-Didem.test.handler-sleep-ms=" + RECORD_MS));
    if (point != null) {
      jvmArgs.add("-Didem.crash.point=" + point.name());
      jvmArgs.add("-Didem.crash.after=" + CRASH_AFTER);
    }
    return ChildJvm.start(name, KafkaCrashChild.class, jvmArgs, List.of(), Map.of(), System.out::println);
  }
}
