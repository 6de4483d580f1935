package io.idem.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.idem.demo.DemoBrokers;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code idem-demo --broker all}: the ledger check on every broker in one command (the consumer
 * in a child JVM, SIGKILLed once at a random moment and restarted), ending with one table. Without
 * the receipts ({@code --no-receipts}): with them this test took 54 s instead of 31–40 s; {@link
 * ReceiptsCrashIT} runs them, with the relay killed too.
 */
class DemoAllBrokersIT {
  private static final int EVENTS = Scale.events(200, 2_000);
  private static final int CRASHES = Scale.events(1, 3);
  private static final int WORKERS = 4; // each demo consumer's concurrency: lines it may lose to a SIGKILL

  @Test
  @Timeout(value = 6, unit = TimeUnit.MINUTES)
  void brokerAllRunsTheLedgerOnEveryBrokerAndPrintsOneTable() {
    DemoOutput demo = DemoOutput.run("--broker", "all", "--events", Integer.toString(EVENTS),
        "--crashes", Integer.toString(CRASHES), "--duplicate-rate", "0.2", "--timeout", "PT3M", "--no-receipts");

    assertThat(demo.exitCode()).as("exit status").isZero();
    List<String[]> rows = table(demo.lines());
    assertThat(rows).extracting(r -> r[0]).as("brokers in the table").containsExactlyElementsOf(DemoBrokers.NAMES);
    long orders = EVENTS - Math.round(EVENTS * 0.2);
    for (String[] r : rows) {
      String broker = r[0];
      assertThat(r).as("columns of %s", broker).hasSize(9);
      assertThat(Long.parseLong(r[1])).as("%s events", broker).isEqualTo(EVENTS);
      assertThat(Long.parseLong(r[2])).as("%s deliveries", broker).isGreaterThanOrEqualTo(EVENTS - (long) WORKERS * CRASHES);
      assertThat(Long.parseLong(r[3])).as("%s duplicates skipped", broker)
          .isGreaterThanOrEqualTo(EVENTS - orders - (long) WORKERS * CRASHES);
      assertThat(Long.parseLong(r[4])).as("%s effects", broker).isEqualTo(orders);
      assertThat(Long.parseLong(r[5])).as("%s doubled", broker).isZero();
      assertThat(Long.parseLong(r[6])).as("%s missing", broker).isZero();
      assertThat(Double.parseDouble(r[7])).as("%s events/s", broker).isPositive();
      assertThat(r[8]).as("%s result", broker).isEqualTo("OK");
    }
    assertThat(demo.text()).as("one ledger per broker")
        .contains("Ledger (kafka)", "Ledger (rabbitmq)", "Ledger (sqs)", "Ledger (jms)");
  }

  @Test
  void anUnknownBrokerIsAUsageError() {
    DemoOutput demo = DemoOutput.run("--broker", "activemq-classic");

    assertThat(demo.exitCode()).as("picocli's usage-error status").isEqualTo(2);
  }

  /** The rows after the table's header line, split on blanks. */
  private static List<String[]> table(List<String> lines) {
    List<String[]> rows = new ArrayList<>();
    boolean inTable = false;
    for (String line : lines) {
      if (line.startsWith("broker ") && line.contains("events/s")) {
        inTable = true;
        rows.clear();
        assertThat(line.trim().split("\\s+")).as("table header").containsExactly(
            "broker", "events", "deliveries", "duplicates", "effects", "doubled", "missing", "events/s", "result");
        continue;
      }
      if (inTable) {
        if (line.isBlank() || !DemoBrokers.NAMES.contains(line.trim().split("\\s+")[0])) {
          inTable = false;
          continue;
        }
        rows.add(line.trim().split("\\s+"));
      }
    }
    return rows;
  }
}
