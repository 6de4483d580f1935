package io.idem.demo;

import static org.assertj.core.api.Assertions.assertThat;

import io.idem.testkit.CrashPoint;
import java.util.List;
import org.junit.jupiter.api.Test;

class LedgerTest {

  private static Ledger ledger(String broker, long doubled, long missing, long wrongDeadLetters, int crashes) {
    return new Ledger(broker, 1000, 800, 1040, 240, 800 + doubled, doubled, missing, 3, 3, wrongDeadLetters,
        crashes, 3, CrashPoint.AFTER_COMMIT, 4.0);
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
    assertThat(lines.get(1)).containsExactly("kafka", "1000", "1040", "240", "800", "0", "0", "260", "OK");
    assertThat(lines.get(2)).containsExactly("rabbitmq", "1000", "1040", "240", "802", "2", "0", "260", "FAILED");
  }

  @Test
  void theTableWidensForLongBrokerNames() {
    String table = Ledger.table(List.of(ledger("rabbitmq->kafka", 0, 0, 0, 3)));

    assertThat(table.lines().skip(1).findFirst().orElseThrow()).startsWith("rabbitmq->kafka ");
  }
}
