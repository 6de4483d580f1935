package io.idem.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.idem.demo.DemoBroker;
import io.idem.demo.DemoBrokers;
import io.idem.demo.Ledger;
import io.idem.demo.MigrationLedger;
import io.idem.demo.MigrationRun;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Moving a consumer group from one broker to another: one store, one consumer group, an adapter
 * for each broker running at once (in one consumer process, SIGKILLed and restarted on the way).
 * The events arrive on the old broker, then on both during the cutover (dual-published), then on
 * the new one: every order is applied exactly once.
 */
class BrokerMigrationIT {
  private static final int EVENTS = Scale.events(240, 3_000);
  private static final int CRASHES = Scale.events(1, 3);
  private static final int LOST_LINES_PER_CRASH = 8; // two adapters × 4 workers may settle unreported

  @ParameterizedTest(name = "{0} -> {1}")
  @CsvSource({"sqs, kafka", "jms, rabbitmq"})
  @Timeout(value = 4, unit = TimeUnit.MINUTES)
  void eachEventIsAppliedOnceWhileItMovesFromTheOldBrokerThroughBothToTheNew(String from, String to)
      throws Exception {
    long seed = System.nanoTime();
    MigrationLedger result;
    try (DemoBroker old = DemoBrokers.create(from); DemoBroker next = DemoBrokers.create(to)) {
      System.out.println("[" + from + "] " + old.start() + "; [" + to + "] " + next.start() + "; seed " + seed);
      result = MigrationRun.builder(old, next).events(EVENTS).crashes(CRASHES).seed(seed)
          .timeout(Duration.ofMinutes(3)).build().run();
    }
    System.out.println(result.describe());
    Ledger ledger = result.ledger();

    assertThat(ledger.doubled()).as("orders applied more than once (seed %d)", seed).isZero();
    assertThat(ledger.missing()).as("orders never applied (seed %d)", seed).isZero();
    assertThat(ledger.effects()).as("business rows").isEqualTo(ledger.uniqueOrders());
    assertThat(ledger.deadLettered()).as("dead letters on either broker").isZero();
    assertThat(ledger.crashes()).as("consumer crashes").isEqualTo(CRASHES);
    long tolerance = (long) LOST_LINES_PER_CRASH * CRASHES;
    assertThat(result.oldOnly() + result.both() + result.newOnly()).isEqualTo(EVENTS);
    assertThat(result.fromDeliveries()).as("deliveries from %s", from)
        .isGreaterThanOrEqualTo(result.oldOnly() + result.both() - tolerance);
    assertThat(result.toDeliveries()).as("deliveries from %s", to)
        .isGreaterThanOrEqualTo(result.both() + result.newOnly() - tolerance);
    assertThat(ledger.duplicatesSkipped()).as("duplicates skipped: at least one per cutover event")
        .isGreaterThanOrEqualTo(result.both() - tolerance);
    assertThat(result.ok()).isTrue();
  }

  @Test
  @Timeout(value = 4, unit = TimeUnit.MINUTES)
  void theMainJobRehearsesRabbitMqToKafkaAndPrintsTheLedger() {
    DemoOutput demo = DemoOutput.run("--migrate-from", "rabbitmq", "--migrate-to", "kafka",
        "--events", Integer.toString(EVENTS), "--crashes", Integer.toString(CRASHES), "--timeout", "PT3M");

    assertThat(demo.exitCode()).as("exit status").isZero();
    assertThat(demo.text()).contains("Migration ledger (rabbitmq -> kafka");
    assertThat(figure(demo.text(), "effects applied")).isEqualTo(EVENTS - Math.round(EVENTS * 0.2));
    assertThat(figure(demo.text(), "doubled effects")).isZero();
    assertThat(figure(demo.text(), "missing effects")).isZero();
    assertThat(figure(demo.text(), "dead-lettered")).isZero();
    assertThat(demo.text()).containsPattern("result\\s+OK");
  }

  @Test
  void migrateFromWithoutMigrateToIsAUsageError() {
    DemoOutput demo = DemoOutput.run("--migrate-from", "rabbitmq");

    assertThat(demo.exitCode()).as("picocli's usage-error status").isEqualTo(2);
  }

  @Test
  void migratingABrokerToItselfIsAUsageError() {
    DemoOutput demo = DemoOutput.run("--migrate-from", "kafka", "--migrate-to", "kafka");

    assertThat(demo.exitCode()).as("picocli's usage-error status").isEqualTo(2);
  }

  private static long figure(String text, String name) {
    Matcher m = Pattern.compile("(?m)^\\s+" + Pattern.quote(name) + "\\s+(\\d+)").matcher(text);
    assertThat(m.find()).as("ledger line '%s'", name).isTrue();
    return Long.parseLong(m.group(1));
  }
}
