package io.idem.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.idem.demo.DemoBroker;
import io.idem.demo.DemoBrokers;
import io.idem.demo.Ledger;
import io.idem.demo.LedgerRun;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The main job's receipts through the transactional outbox, with the consumer AND the relay
 * killed: each OrderPaid handler enqueues a receipt in its transaction; a relay in a child JVM
 * publishes them with the broker's own outbox publisher to a second destination on the same
 * broker; a downstream Idem consumer (its own consumer group, in the consumer's JVM) applies them.
 * The consumer JVM is SIGKILLed at random moments; the relay JVM is SIGKILLed while it waits right
 * after the broker confirmed a receipt and before it marked the row sent, so the rows of its batch
 * are published twice. Afterwards, counted in the database: one outbox row per order, all sent, one
 * receipt per order, none doubled, none missing, and the rows confirmed before each kill were
 * left unsent (published again) — the downstream consumer skipped their copies.
 *
 * <p>Kafka (a partitioned topic, group offsets) and RabbitMQ (a quorum queue, publisher
 * confirms) on PostgreSQL, and Kafka on MariaDB (the main job's {@code --database mariadb}: the
 * store, the outbox's claim, lease and marks and the ledger's counts there); the crash matrix ({@link CrashMatrixIT}) runs without receipts. CI scale: 240 events,
 * 2 consumer and 2 relay crashes per broker; {@code -Didem.it.scale=full}: 3,000 events, 4 each.
 */
class ReceiptsCrashIT {
  private static final int EVENTS = Scale.events(240, 3_000);
  private static final int CRASHES = Scale.events(2, 4);

  @ParameterizedTest(name = "{0} on {1}, consumer and relay killed")
  @CsvSource({"kafka, postgresql", "rabbitmq, postgresql", "kafka, mariadb"})
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void everyOrderGetsOneReceiptWhenTheConsumerAndTheRelayAreKilled(String brokerName, String database)
      throws Exception {
    long seed = Long.getLong("idem.it.seed", System.nanoTime());
    Ledger ledger;
    try (DemoBroker broker = DemoBrokers.create(brokerName)) {
      System.out.println("[" + brokerName + "] " + broker.start() + "; seed " + seed);
      ledger = LedgerRun.builder(broker)
          .database(database)
          .events(EVENTS)
          .duplicateRate(0.2)
          .crashes(CRASHES)
          .receipts(true)
          .seed(seed)
          .timeout(Duration.ofMinutes(4))
          .build()
          .run();
    }
    System.out.println(ledger.describe());

    assertThat(ledger.crashes()).as("consumer crashes (seed %d)", seed).isEqualTo(CRASHES);
    assertThat(ledger.doubled()).as("orders applied twice (seed %d)", seed).isZero();
    assertThat(ledger.missing()).as("orders never applied (seed %d)", seed).isZero();
    Ledger.Receipts receipts = ledger.receipts();
    assertThat(receipts).as("the run's receipts").isNotNull();
    assertThat(receipts.relayCrashes()).as("relay crashes (seed %d)", seed).isEqualTo(CRASHES);
    assertThat(receipts.unplannedRelayDeaths()).as("relays that died unplanned").isZero();
    assertThat(receipts.enqueued()).as("outbox rows: one per order").isEqualTo(ledger.uniqueOrders());
    assertThat(receipts.published()).as("outbox rows marked sent").isEqualTo(receipts.enqueued());
    assertThat(receipts.republished())
        .as("rows confirmed by the broker and left unsent by a relay kill (at least the one it paused on, per kill)")
        .isGreaterThanOrEqualTo(CRASHES);
    assertThat(receipts.doubled()).as("receipts applied twice (seed %d)", seed).isZero();
    assertThat(receipts.missing()).as("orders without a receipt (seed %d)", seed).isZero();
    assertThat(receipts.applied()).as("receipt rows").isEqualTo(ledger.uniqueOrders());
    assertThat(ledger.ok()).isTrue();
  }
}
