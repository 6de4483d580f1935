package io.idem.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.idem.demo.DemoBroker;
import io.idem.demo.DemoBrokers;
import io.idem.demo.Ledger;
import io.idem.demo.LedgerRun;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The main job's {@code --replay-dead-letters}: some orders fail non-retryably and are
 * dead-lettered with their reason while the consumer is SIGKILLed; once everything else is applied
 * the failure is switched off and {@code idem-cli dead-letters replay} runs twice ({@code --keep},
 * then again): every order applied exactly once, the second replay applying nothing. On Kafka,
 * whose topic keeps the replayed records (about 1 min on a loaded machine, 2 with RabbitMQ too: the
 * tool itself runs on all four brokers in {@link DeadLetterToolIT}). On PostgreSQL and on MariaDB
 * (the store's dead-letter decisions and the tool's records there, idem-cli with a jdbc:mariadb:
 * URL); with receipts (the main job's default: the failing orders' receipts follow their replay)
 * and without. CI scale: 200 events, 3 failing orders, 1 crash.
 */
class MainJobReplayIT {
  private static final int EVENTS = Scale.events(200, 2_000);
  private static final int FAILING = Scale.events(3, 20);

  @ParameterizedTest(name = "{0} on {1}, receipts {2}")
  @CsvSource({"kafka, postgresql, false", "kafka, postgresql, true", "kafka, mariadb, true"})
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void theReplayedOrdersAreAppliedOnceAndASecondReplayAppliesNothing(String brokerName, String database,
      boolean receipts) throws Exception {
    long seed = Long.getLong("idem.it.seed", System.nanoTime());
    List<String> lines = new CopyOnWriteArrayList<>();
    Ledger ledger;
    try (DemoBroker broker = DemoBrokers.create(brokerName)) {
      System.out.println("[" + brokerName + "] " + broker.start() + "; seed " + seed);
      ledger = LedgerRun.builder(broker).database(database).receipts(receipts).events(EVENTS).crashes(1)
          .replayDeadLetters(FAILING).seed(seed)
          .timeout(Duration.ofMinutes(4)).output(lines::add).build().run();
    }
    assertThat(lines).as("the replays (seed %d)", seed)
        .anySatisfy(l -> assertThat(l).contains("replay 1: ").contains("copied back (exit 0)"))
        .anySatisfy(l -> assertThat(l).contains("replay 2: ").contains("(exit 0); orders applied twice: 0"));
    assertThat(ledger.doubled()).as("orders applied twice (seed %d)", seed).isZero();
    assertThat(ledger.missing()).as("orders never applied, the failing ones included (seed %d)", seed).isZero();
    assertThat(ledger.wrongDeadLetters()).as("dead letters left (seed %d)", seed).isZero();
    assertThat(ledger.ok()).as(String.join("\n", lines) + ledger.describe()).isTrue();
  }
}
