package io.idem.demo;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The main job: proves exactly-once effects on real brokers and a real PostgreSQL while the
 * consumer is killed at random points. See README.md.
 */
@Command(
    name = "idem-demo",
    mixinStandardHelpOptions = true,
    description = {
      "Publishes OrderPaid events (a share of them producer retries with the same business id),",
      "consumes them with Idem in a child process that is killed with SIGKILL at random points and",
      "restarted, then prints a ledger. Exits 1 when any effect is doubled or missing."
    })
public final class DemoMain implements Callable<Integer> {

  @Option(names = "--broker", defaultValue = "kafka",
      description = "Broker to run on: ${COMPLETION-CANDIDATES} or all (default: ${DEFAULT-VALUE}).",
      completionCandidates = BrokerNames.class)
  String broker;

  @Option(names = "--events", defaultValue = "10000", description = "Events to publish (default: ${DEFAULT-VALUE}).")
  int events;

  @Option(names = "--duplicate-rate", defaultValue = "0.2",
      description = "Share of events that are producer retries of an earlier event (default: ${DEFAULT-VALUE}).")
  double duplicateRate;

  @Option(names = "--crashes", defaultValue = "3",
      description = "How many times the consumer is killed mid-stream (default: ${DEFAULT-VALUE}).")
  int crashes;

  @Option(names = "--seed", description = "Random seed (default: time-based).")
  Long seed;

  @Option(names = "--timeout", defaultValue = "PT10M",
      description = "Give up on a broker after this long, ISO-8601 (default: ${DEFAULT-VALUE}).")
  Duration timeout;

  @Option(names = "--keep-schema", description = "Keep the demo's PostgreSQL schema after a successful run.")
  boolean keepSchema;

  static final class BrokerNames extends ArrayList<String> {
    private static final long serialVersionUID = 1L;

    BrokerNames() {
      super(DemoBrokers.NAMES);
    }
  }

  public static void main(String[] args) {
    System.exit(new CommandLine(new DemoMain()).execute(args));
  }

  @Override
  public Integer call() throws Exception {
    if (events < 1) {
      throw new CommandLine.ParameterException(new CommandLine(this), "--events must be >= 1, but was " + events);
    }
    if (!(duplicateRate >= 0 && duplicateRate < 1)) {
      throw new CommandLine.ParameterException(new CommandLine(this),
          "--duplicate-rate must be in [0, 1), but was " + duplicateRate);
    }
    if (crashes < 0) {
      throw new CommandLine.ParameterException(new CommandLine(this), "--crashes must be >= 0, but was " + crashes);
    }
    // The demo uses IDEM_POSTGRES_URL, else 127.0.0.1:5432, else an embedded PostgreSQL: no containers.
    System.setProperty("idem.testcontainers", "false");
    List<String> names = broker.equals("all") ? DemoBrokers.NAMES : List.of(broker);
    List<Ledger> ledgers = new ArrayList<>();
    long baseSeed = seed != null ? seed : System.nanoTime();
    for (String name : names) {
      try (DemoBroker b = DemoBrokers.create(name)) {
        System.out.println("[" + name + "] " + b.start());
        Ledger ledger = LedgerRun.builder(b).events(events).duplicateRate(duplicateRate).crashes(crashes)
            .seed(baseSeed).timeout(timeout).keepSchema(keepSchema).build().run();
        System.out.println(ledger.describe());
        ledgers.add(ledger);
      }
    }
    if (ledgers.size() > 1) {
      System.out.println();
      System.out.print(Ledger.table(ledgers));
    }
    return ledgers.stream().allMatch(Ledger::ok) ? 0 : 1;
  }
}
