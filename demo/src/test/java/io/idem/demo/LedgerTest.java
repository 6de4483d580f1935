package io.idem.demo;

import static org.assertj.core.api.Assertions.assertThat;

import io.idem.testkit.CrashPoint;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class LedgerTest {

  private static Ledger ledger(String broker, long doubled, long missing, long wrongDeadLetters, int crashes) {
    return new Ledger(broker, 1000, 800, 1040, 240, 800 + doubled, 800, doubled, missing, 3, 3, wrongDeadLetters,
        crashes, 3, CrashPoint.AFTER_COMMIT, 4.0);
  }

  /** The issue's run: one APPLIED line lost to a SIGKILL made 10,100 deliveries < 8,000 + 2,101. */
  private static Ledger lostOutcomeLine() {
    return new Ledger("kafka", 10_000, 8_000, 10_100, 2_101, 8_000, 8_000, 0, 0, 0, 0, 0, 3, 3, null, 20.0);
  }

  @Test
  void aConsumerThatDiedUnplannedFailsTheRunEvenWithEveryOrderAppliedOnce() {
    Ledger clean = new Ledger("rabbitmq", 1000, 800, 1040, 240, 800, 800, 0, 0, 3, 3, 0, 3, 3,
        CrashPoint.DURING_ACK, 4.0, 0, 1);
    Ledger died = new Ledger("rabbitmq", 1000, 800, 1040, 240, 800, 800, 0, 0, 3, 3, 0, 3, 3,
        CrashPoint.DURING_ACK, 4.0, 1, 1);

    assertThat(clean.ok()).isTrue();
    assertThat(died.ok()).isFalse();
    assertThat(died.describe()).contains("unplanned deaths").contains("FAILED");
  }

  @Test
  void theEstimatedDeliveriesCoverEveryEffectDuplicateAndDeadLetter() {
    Ledger l = lostOutcomeLine();

    assertThat(l.duplicatesAtLeast()).isEqualTo(2_101);
    assertThat(l.deliveriesAtLeast()).isEqualTo(10_101)
        .isGreaterThanOrEqualTo(l.effects() + l.duplicatesAtLeast() + l.deadLettered());
    assertThat(l.retriesPublished()).isEqualTo(2_000);
  }

  @Test
  void everyOrderAppliedOnceMeansAtLeastOneDuplicatePerRetryEvenUnreported() {
    Ledger l = new Ledger("sqs", 10_000, 8_000, 9_990, 1_990, 8_000, 8_000, 0, 0, 0, 0, 0, 3, 3, null, 20.0);

    assertThat(l.duplicatesAtLeast()).isEqualTo(2_000);
    assertThat(l.deliveriesAtLeast()).isEqualTo(10_000);
  }

  @Test
  void theReportSaysWhereEachFigureComesFromAndMarksTheEstimates() {
    List<String> lines = lostOutcomeLine().describe().lines().toList();

    assertThat(lines).anySatisfy(l -> assertThat(l).contains("events published").contains("10,000")
        .contains("counted by the producer"));
    assertThat(lines).anySatisfy(l -> assertThat(l).contains("effects applied").contains("8,000")
        .contains("rows in the business table"));
    assertThat(lines).anySatisfy(l -> assertThat(l).contains("markers").contains("processed-events table"));
    assertThat(lines).anySatisfy(l -> assertThat(l).contains("dead-lettered").contains("read back"));
    assertThat(lines).anySatisfy(l -> assertThat(l).contains("duplicates skipped").contains(">= 2,101")
        .contains("estimate"));
    assertThat(lines).anySatisfy(l -> assertThat(l).contains("deliveries").contains(">= 10,101")
        .contains("estimate").contains("reported 10100"));
    assertThat(lines).anySatisfy(l -> assertThat(l).contains("result").contains("OK"));
  }

  @Test
  void theReportNamesTheModeItRanWithItsThroughput() {
    assertThat(lostOutcomeLine().mode()).isEqualTo("per-message");
    assertThat(lostOutcomeLine().describe().lines())
        .anySatisfy(l -> assertThat(l).contains("throughput").contains("500 events/s").contains("per-message mode"));
    Ledger batch = new Ledger("kafka", 10_000, 8_000, 10_000, 2_000, 8_000, 8_000, 0, 0, 0, 0, 0, 3, 3, null, 20.0, 0, 50);
    assertThat(batch.mode()).isEqualTo("batch 50");
    assertThat(batch.describe().lines()).anySatisfy(l -> assertThat(l).contains("mode").contains("batch 50"))
        .anySatisfy(l -> assertThat(l).contains("throughput").contains("batch 50 mode"));
  }

  @Test
  void okNeedsNoDoubledNoMissingNoWrongDeadLetterAndEveryPlannedCrash() {
    assertThat(ledger("kafka", 0, 0, 0, 3).ok()).isTrue();
    assertThat(ledger("kafka", 1, 0, 0, 3).ok()).isFalse();
    assertThat(ledger("kafka", 0, 1, 0, 3).ok()).isFalse();
    assertThat(ledger("kafka", 0, 0, 1, 3).ok()).isFalse();
    assertThat(ledger("kafka", 0, 0, 0, 2).ok()).isFalse();
  }

  @Test
  void tableHasAHeaderAndOneRowPerLedgerWithTheIssuesColumns() {
    String table = Ledger.table(List.of(ledger("kafka", 0, 0, 0, 3), ledger("rabbitmq", 2, 0, 0, 3)));

    List<String[]> lines = table.lines().map(l -> l.trim().split("\\s+")).toList();
    assertThat(lines).hasSize(3);
    assertThat(lines.get(0)).containsExactly(
        "broker", "events", "deliveries", "duplicates", "effects", "doubled", "missing", "events/s", "result");
    // deliveries: at least effects + duplicates + dead letters; events/s: events published per second
    assertThat(lines.get(1)).containsExactly("kafka", "1000", "1043", "240", "800", "0", "0", "250", "OK");
    assertThat(lines.get(2)).containsExactly("rabbitmq", "1000", "1045", "240", "802", "2", "0", "250", "FAILED");
  }

  @Test
  void theTableWidensForLongBrokerNames() {
    String table = Ledger.table(List.of(ledger("rabbitmq->kafka", 0, 0, 0, 3)));

    assertThat(table.lines().skip(1).findFirst().orElseThrow()).startsWith("rabbitmq->kafka ");
  }

  private static Ledger.Receipts receipts(long published, long doubled, long missing, int relayCrashes, int relayDeaths) {
    return new Ledger.Receipts("idem-demo-kafka-x-receipts", 800, published, 800 + doubled, doubled, missing, 3, 2,
        relayCrashes, 3, relayDeaths);
  }

  @Test
  void theReceiptLinesSayWhereEachFigureComesFrom() {
    List<String> lines = ledger("kafka", 0, 0, 0, 3).withReceipts(receipts(800, 0, 0, 3, 0)).describe().lines().toList();

    assertThat(lines).anySatisfy(l -> assertThat(l).contains("receipts enqueued").contains("800")
        .contains("rows in the outbox table"));
    assertThat(lines).anySatisfy(l -> assertThat(l).contains("receipts published").contains("800")
        .contains("outbox rows a relay marked sent").doesNotContain("NOT SENT"));
    assertThat(lines).anySatisfy(l -> assertThat(l).contains("receipts applied").contains("800")
        .contains("rows in the receipts table"));
    assertThat(lines).anySatisfy(l -> assertThat(l).contains("doubled receipts").contains(" 0 "));
    assertThat(lines).anySatisfy(l -> assertThat(l).contains("missing receipts").contains(" 0 "));
    assertThat(lines).anySatisfy(l -> assertThat(l).contains("published again").contains(" 3 ")
        .contains("still unsent after the kill"));
    // two reported, but each of the three rows published again was a copy the consumer skipped
    assertThat(lines).anySatisfy(l -> assertThat(l).contains("copies skipped").contains(">= 3").contains("estimate")
        .contains("reported 2"));
    assertThat(lines).anySatisfy(l -> assertThat(l).contains("relay crashes").contains("3/3").contains("SIGKILL"));
    assertThat(lines).anySatisfy(l -> assertThat(l).contains("result").contains("OK").contains("and its receipt"));
    assertThat(lines.indexOf(lines.stream().filter(l -> l.contains("receipts enqueued")).findFirst().orElseThrow()))
        .as("the receipts follow the orders' lines, before the mode and the result")
        .isLessThan(lines.indexOf(lines.stream().filter(l -> l.contains("  mode ")).findFirst().orElseThrow()));
  }

  @Test
  void aLedgerWithoutReceiptsHasNoReceiptLines() {
    assertThat(lostOutcomeLine().receipts()).isNull();
    assertThat(lostOutcomeLine().describe()).doesNotContain("receipt");
  }

  @Test
  void okNeedsEveryReceiptAppliedOnceEveryRowSentAndEveryRelayCrash() {
    Ledger orders = ledger("kafka", 0, 0, 0, 3);

    assertThat(orders.withReceipts(receipts(800, 0, 0, 3, 0)).ok()).isTrue();
    assertThat(orders.withReceipts(receipts(800, 1, 0, 3, 0)).ok()).as("a receipt doubled").isFalse();
    assertThat(orders.withReceipts(receipts(800, 0, 1, 3, 0)).ok()).as("a receipt missing").isFalse();
    assertThat(orders.withReceipts(receipts(799, 0, 0, 3, 0)).ok()).as("a row not sent").isFalse();
    assertThat(orders.withReceipts(receipts(800, 0, 0, 2, 0)).ok()).as("a relay crash that did not happen").isFalse();
    assertThat(orders.withReceipts(receipts(800, 0, 0, 3, 1)).ok()).as("a relay that died unplanned").isFalse();
    assertThat(ledger("kafka", 1, 0, 0, 3).withReceipts(receipts(800, 0, 0, 3, 0)).ok())
        .as("receipts right, orders wrong").isFalse();
    assertThat(orders.withReceipts(receipts(799, 0, 1, 3, 0)).describe()).contains("1 NOT SENT").contains("FAILED");
  }

  @Test
  void copiesSkippedAreOnlyWhatWasReportedWhenAReceiptIsDoubledOrMissing() {
    assertThat(receipts(800, 0, 0, 3, 0).duplicatesAtLeast()).isEqualTo(3);
    assertThat(receipts(800, 1, 0, 3, 0).duplicatesAtLeast()).isEqualTo(2);
    assertThat(receipts(800, 0, 1, 3, 0).duplicatesAtLeast()).isEqualTo(2);
  }

  @Test
  void theTableAddsTheReceiptColumnsWhenAnyLedgerHasReceipts() {
    String table = Ledger.table(List.of(ledger("kafka", 0, 0, 0, 3).withReceipts(receipts(800, 0, 0, 3, 0)),
        ledger("rabbitmq", 0, 0, 0, 3).withReceipts(receipts(800, 2, 0, 3, 0)), ledger("sqs", 0, 0, 0, 3)));

    List<String[]> lines = table.lines().map(l -> l.trim().split("\\s+")).toList();
    assertThat(lines.get(0)).containsExactly("broker", "events", "deliveries", "duplicates", "effects", "doubled",
        "missing", "events/s", "receipts", "r-doubled", "r-missing", "result");
    assertThat(lines.get(1)).containsExactly("kafka", "1000", "1043", "240", "800", "0", "0", "250", "800", "0", "0", "OK");
    assertThat(lines.get(2))
        .containsExactly("rabbitmq", "1000", "1043", "240", "800", "0", "0", "250", "802", "2", "0", "FAILED");
    assertThat(lines.get(3)).containsExactly("sqs", "1000", "1043", "240", "800", "0", "0", "250", "-", "-", "-", "OK");
  }

  /** The issue's --broker all run on SQS: every order applied once so far, the timeout ran out first. */
  private static Ledger timedOut(long doubled, long receiptsDoubled) {
    return new Ledger("sqs", 1000, 800, 700, 100, 405 + doubled, 405, doubled, 395, 0, 0, 0, 3, 3, null, 600.0, 0, 1)
        .withReceipts(new Ledger.Receipts("idem-demo-sqs-x-receipts", 405, 10, 323 + receiptsDoubled, receiptsDoubled,
            477, 0, 0, 3, 3, 0))
        .withTimedOut(Duration.ofMinutes(10));
  }

  @Test
  void aRunThatTimedOutReadsAsATimeoutNotAsLostData() {
    Ledger l = timedOut(0, 0);
    String report = l.describe();

    assertThat(l.ok()).isFalse();
    assertThat(l.result()).isEqualTo("TIMED OUT");
    assertThat(l.exitStatus()).isEqualTo(Ledger.EXIT_TIMED_OUT).isEqualTo(3);
    assertThat(report.lines()).element(2).asString()
        .isEqualTo("  TIMED OUT after 10m: 405 of 800 orders applied so far (323 receipts), nothing doubled");
    assertThat(report.lines())
        .anySatisfy(line -> assertThat(line).contains("not yet applied").contains("395").contains("timed out"))
        .anySatisfy(line -> assertThat(line).contains("receipts published").contains("395 not yet sent (timed out)"))
        .anySatisfy(line -> assertThat(line).contains("not yet received").contains("477").contains("timed out"))
        .anySatisfy(line -> assertThat(line).contains("result").contains("TIMED OUT").contains("--timeout 10m"))
        .anySatisfy(line -> assertThat(line).contains("throughput").contains("to the timeout"));
    assertThat(report).doesNotContain("NOT SENT").doesNotContain("missing effects").doesNotContain("missing receipts")
        .doesNotContain("FAILED");
  }

  @Test
  void aRunThatTimedOutWithSomethingDoubledStillFails() {
    assertThat(timedOut(1, 0).result()).isEqualTo("FAILED");
    assertThat(timedOut(0, 2).result()).isEqualTo("FAILED");
    assertThat(timedOut(0, 2).exitStatus()).isEqualTo(1);
    assertThat(timedOut(1, 0).describe()).contains("SOMETHING DOUBLED").contains("timed out too");
    assertThat(ledger("kafka", 0, 0, 0, 3).withTimedOut(Duration.ofSeconds(90)).result())
        .as("every order applied and every crash done before the timeout: OK").isEqualTo("OK");
  }

  @Test
  void theTableShowsATimedOutRunsUnappliedFiguresInParenthesesAndItsResult() {
    String table = Ledger.table(List.of(ledger("kafka", 0, 0, 0, 3).withReceipts(receipts(800, 0, 0, 3, 0)),
        timedOut(0, 0)));

    List<String> lines = table.lines().toList();
    assertThat(lines.get(2).trim().split("\\s+")).containsExactly(
        "sqs", "1000", "700", "100", "405", "0", "(395)", "2", "323", "0", "(477)", "TIMED", "OUT");
  }
}
