package io.idem.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;

/**
 * The side-by-side command runs end to end on each broker of the fixtures (Kafka in-JVM, the
 * RabbitMQ server, ElasticMQ in-JVM, embedded Artemis) and their PostgreSQL, small: 100 records
 * with 20 % producer retries, one round of every variant. Its ledgers must add up: Idem applies
 * each order once, the plain consumers apply every retry again; each run prints its RESULT line
 * and the round its RATIO lines; on Kafka also with MariaDB beside PostgreSQL. Not a measurement
 * (the numbers are not looked at).
 */
class SideBySideSmokeIT {

  @ParameterizedTest(name = "--broker {0}")
  @ValueSource(strings = {"kafka", "rabbitmq", "sqs", "jms"})
  void theCommandRunsAndItsLedgersAddUp(String broker) {
    ByteArrayOutputStream printed = new ByteArrayOutputStream();
    SideBySide command = new SideBySide(new PrintStream(printed, true, StandardCharsets.UTF_8));
    int exit = new CommandLine(command).execute(
        "--broker", broker, "--events", "100", "--warmup-events", "0", "--rounds", "1", "--timeout", "PT2M");

    String output = printed.toString(StandardCharsets.UTF_8);
    assertThat(exit).as(output).isZero();
    List<SideBySide.RunResult> runs = command.results();
    assertThat(runs).extracting(SideBySide.RunResult::name)
        .containsExactly("idem", "idem-per-message", "idem-batch", "idem-batch-handler", "raw-tx", "raw-batch");
    assertLedgersAddUp(broker, runs, output);
    assertThat(output).containsPattern("(?m)^RATIO broker=" + broker + " round=1 idem/raw-tx=[0-9.]+$")
        .containsPattern("(?m)^RATIO broker=" + broker + " round=1 idem-per-message/raw-tx=[0-9.]+$")
        .containsPattern("(?m)^RATIO broker=" + broker + " round=1 idem-batch-handler/raw-batch=[0-9.]+$");
  }

  /**
   * {@code --databases postgresql,mariadb} on Kafka: every variant on each database in the round,
   * MariaDB's ratios against its own plain consumers and against the same variant on PostgreSQL.
   */
  @Test
  void onMariaDbBesidePostgresqlInOneRun() {
    ByteArrayOutputStream printed = new ByteArrayOutputStream();
    SideBySide command = new SideBySide(new PrintStream(printed, true, StandardCharsets.UTF_8));
    int exit = new CommandLine(command).execute("--broker", "kafka", "--databases", "postgresql,mariadb",
        "--events", "100", "--warmup-events", "0", "--rounds", "1", "--timeout", "PT2M");

    String output = printed.toString(StandardCharsets.UTF_8);
    assertThat(exit).as(output).isZero();
    List<SideBySide.RunResult> runs = command.results();
    assertThat(runs).extracting(SideBySide.RunResult::name).containsExactly(
        "idem", "idem-per-message", "idem-batch", "idem-batch-handler", "raw-tx", "raw-batch",
        "idem@mariadb", "idem-per-message@mariadb", "idem-batch@mariadb", "idem-batch-handler@mariadb", "raw-tx@mariadb", "raw-batch@mariadb");
    assertLedgersAddUp("kafka", runs, output);
    assertThat(output).containsPattern("(?m)^mariadb: version=\\d+\\.")
        .containsPattern("(?m)^RATIO broker=kafka round=1 idem@mariadb/raw-tx@mariadb=[0-9.]+$")
        .containsPattern("(?m)^RATIO broker=kafka round=1 idem@mariadb/idem=[0-9.]+$")
        .containsPattern("(?m)^RATIO broker=kafka round=1 idem-batch@mariadb/raw-tx@mariadb=[0-9.]+$")
        .containsPattern("(?m)^RATIO broker=kafka round=1 idem-batch-handler@mariadb/raw-batch@mariadb=[0-9.]+$");
  }

  private static void assertLedgersAddUp(String broker, List<SideBySide.RunResult> runs, String output) {
    for (SideBySide.RunResult run : runs) {
      BenchDatabase.Ledger ledger = run.ledger();
      assertThat(ledger).as(run.name()).isNotNull();
      // 100 records, 20 of them retries of 80 distinct orders
      assertThat(ledger.expected()).as(run.name()).isEqualTo(80);
      assertThat(ledger.missing()).as(run.name()).isZero();
      if (run.name().startsWith("idem")) {
        assertThat(ledger.effects()).as(run.name()).isEqualTo(80);
        assertThat(ledger.doubled()).as(run.name()).isZero();
        assertThat(ledger.markers()).as(run.name()).isEqualTo(80);
      } else {
        assertThat(ledger.effects()).as(run.name()).isEqualTo(100);
        assertThat(ledger.doubled()).as(run.name()).isEqualTo(20);
      }
      assertThat(run.eventsPerSecond()).as(run.name()).isPositive();
      assertThat(output).containsPattern("(?m)^RESULT broker=" + broker + " variant=" + run.name()
          + " events/s=[0-9.]+ doubled=" + ledger.doubled() + " missing=0 ");
    }
  }
}
