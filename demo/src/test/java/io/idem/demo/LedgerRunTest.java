package io.idem.demo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.idem.testkit.CrashPoint;

import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class LedgerRunTest {

  @Test
  void crashAfterLeavesEnoughOrdersForEveryRemainingCrash() {
    Random random = new Random(1);
    for (int i = 0; i < 10_000; i++) {
      long ordersLeft = random.nextInt(5_000);
      int crashesLeft = 1 + random.nextInt(5);
      long after = LedgerRun.crashAfter(ordersLeft, crashesLeft, random);
      assertThat(after).isBetween(0L, Math.max(0, ordersLeft / (crashesLeft + 1) - 1));
    }
  }

  @Test
  void crashAfterIsZeroWhenFewOrdersAreLeft() {
    assertThat(LedgerRun.crashAfter(0, 1, new Random(1))).isZero();
    assertThat(LedgerRun.crashAfter(3, 2, new Random(1))).isZero();
  }

  @Test
  void crashesWhileDeadLetteringNeedMessagesToDeadLetter() {
    LedgerRun.Builder run = LedgerRun.builder(DemoBrokers.create("kafka"))
        .crashPoint(CrashPoint.DEAD_LETTER_COPY_STORED).crashes(1);

    assertThatThrownBy(run::build).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("poison");
    run.poisonMessages(1).build();
  }

  @Test
  void aHaltCountsAsPlannedOnlyAtThePlannedPointAndInsideABrokerCallWhereOneIsNeeded() {
    List<String> ack = List.of("READY", "IDEM-CRASH DURING_ACK broker-call:KafkaConsumer.commitSync");

    assertThat(LedgerRun.landedAt(ack, CrashPoint.DURING_ACK)).isEqualTo("DURING_ACK inside KafkaConsumer.commitSync");
    assertThat(LedgerRun.landedAt(ack, CrashPoint.AFTER_COMMIT)).as("another point").isNull();
    assertThat(LedgerRun.landedAt(ack, null)).as("no point planned").isNull();
    assertThat(LedgerRun.landedAt(List.of("IDEM-CRASH DURING_ACK order-17"), CrashPoint.DURING_ACK))
        .as("a helper thread's halt, a moment after the commit").isNull();
    assertThat(LedgerRun.landedAt(List.of("IDEM-CRASH AFTER_COMMIT order-17"), CrashPoint.AFTER_COMMIT))
        .isEqualTo("AFTER_COMMIT (key order-17)");
  }
}
