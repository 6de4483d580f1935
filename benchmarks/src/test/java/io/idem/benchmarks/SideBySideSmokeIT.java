package io.idem.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.OutputStream;
import java.io.PrintStream;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * The side-by-side command runs end to end on the fixtures' PostgreSQL and Kafka, small: 100
 * records with 20 % producer retries, Idem per-message and the plain per-record consumer. Its
 * ledgers must add up: Idem applies each order once, the plain consumer applies every retry again.
 * Not a measurement (the numbers are not looked at).
 */
class SideBySideSmokeIT {

  @Test
  void theCommandRunsAndItsLedgersAddUp() {
    SideBySide command = new SideBySide(new PrintStream(OutputStream.nullOutputStream()));
    int exit = new CommandLine(command).execute(
        "--events", "100", "--warmup-events", "0", "--rounds", "1", "--variants", "idem,raw-tx", "--timeout", "PT2M");

    assertThat(exit).isZero();
    List<SideBySide.RunResult> runs = command.results();
    assertThat(runs).extracting(SideBySide.RunResult::name).containsExactly("idem", "raw-tx");
    BenchDatabase.Ledger idem = runs.get(0).ledger();
    BenchDatabase.Ledger raw = runs.get(1).ledger();
    assertThat(idem).isNotNull();
    assertThat(raw).isNotNull();
    // 100 records, 20 of them retries of 80 distinct orders
    assertThat(idem.expected()).isEqualTo(80);
    assertThat(idem.effects()).isEqualTo(80);
    assertThat(idem.doubled()).isZero();
    assertThat(idem.missing()).isZero();
    assertThat(idem.markers()).isEqualTo(80);
    assertThat(raw.effects()).isEqualTo(100);
    assertThat(raw.doubled()).isEqualTo(20);
    assertThat(raw.missing()).isZero();
    assertThat(runs).allSatisfy(r -> assertThat(r.eventsPerSecond()).isPositive());
  }
}
