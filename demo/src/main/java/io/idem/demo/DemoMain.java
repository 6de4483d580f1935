package io.idem.demo;

import io.idem.fixtures.MariaDbFixture;
import io.idem.fixtures.PostgresFixture;
import io.idem.fixtures.ServerUnavailableException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.Callable;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * The main job: proves exactly-once effects on real brokers (or over HTTP) and a real PostgreSQL
 * or MariaDB while the consumer is killed at random points. See README.md.
 */
@Command(
    name = "idem-demo",
    mixinStandardHelpOptions = true,
    versionProvider = DemoMain.Version.class,
    usageHelpAutoWidth = true,
    description = {
      "Publishes OrderPaid events (a share of them producer retries with the same business id), "
          + "consumes them with Idem in a child process that is killed with SIGKILL at random points "
          + "and restarted, then prints a ledger. Exits 1 when any effect is doubled or missing.",
      "With receipts (the default), each handler also enqueues a receipt in the transactional outbox; "
          + "a relay in a second child process, SIGKILLed as often as the consumer right after the broker "
          + "confirmed a receipt and before it marked it sent, publishes them to a second destination on "
          + "the same broker; a downstream Idem consumer applies them.",
      "With --migrate-from and --migrate-to it rehearses moving the consumer from one broker to "
          + "another instead: old broker only, then both (dual-published), then the new one only."
    },
    footerHeading = "%nThe ledger: where each figure comes from%n",
    footer = {
      "  events published    the producer's count, each send acknowledged by the broker",
      "  effects applied     rows in the business table (the database)",
      "  markers             rows in the processed-events table (the database)",
      "  doubled, missing    rows beyond one per order; published orders without a row",
      "  dead-lettered       messages read back from the dead-letter destination",
      "  duplicates skipped  estimate (>=): the DUPLICATE outcomes the consumer",
      "                      reported, and at least one per producer retry",
      "  deliveries          estimate (>=): the outcomes the consumer reported, and at",
      "                      least effects + duplicates skipped + dead letters; one",
      "                      settled just before a SIGKILL goes unreported",
      "  receipts enqueued   rows in the outbox table (the database), written by the",
      "                      OrderPaid handlers in their transactions",
      "  receipts published  outbox rows the relay marked sent (the database)",
      "  receipts applied    rows in the receipts table (the database), written by the",
      "                      downstream consumer",
      "  doubled, missing    receipt rows beyond one per order; orders without one",
      "  published again     rows the broker had confirmed when the relay was killed,",
      "                      still unsent after the kill (the database)",
      "  copies skipped      estimate (>=): DUPLICATE outcomes of the receipts consumer",
      "  mode                per-message, or batch N (--batch N: at most N messages",
      "                      per database transaction)",
      "  events/s            events published / seconds from the first consumer start",
      "                      to the last message settled",
      "%nExit status: 0 when every order was applied exactly once; 1 when an effect is",
      "doubled or missing, or a run failed; 2 for a usage error or a prerequisite that",
      "cannot be reached (RabbitMQ, PostgreSQL at IDEM_POSTGRES_URL, MariaDB); 3 when --timeout",
      "ran out first with nothing doubled (TIMED OUT: the rest not applied yet)."
    })
public final class DemoMain implements Callable<Integer> {

  /** {@code --version}: the Implementation-Version of the demo jar's manifest. */
  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      String version = DemoMain.class.getPackage().getImplementationVersion();
      return new String[] {
        "idem-demo " + (version != null ? version : "(development build: no jar manifest)"),
        "Java " + System.getProperty("java.version") + " (" + System.getProperty("java.vendor") + ")"
      };
    }
  }

  private final PrintStream out;

  /** The command on standard output. */
  public DemoMain() {
    this(System.out);
  }

  /** The command printing its progress and ledgers to {@code out} (for tests). */
  public DemoMain(PrintStream out) {
    this.out = Objects.requireNonNull(out, "out");
  }

  /** Where the ledger runs when neither {@code --broker} nor {@code --migrate-*} is given. */
  static final String DEFAULT_BROKER = "kafka";

  @Option(names = "--broker",
      description = "Broker to run on: ${COMPLETION-CANDIDATES} or all, in any case (default: " + DEFAULT_BROKER
          + "). Not with --migrate-from/--migrate-to.",
      completionCandidates = BrokerNames.class)
  @Nullable String broker;

  @Option(names = "--source", defaultValue = "broker", paramLabel = "SOURCE",
      description = "Where the OrderPaid stream comes from: broker (--broker's, the default) or webhooks"
          + " (Stripe-style signed HTTP POSTs, with timeouts and retries, to an idem-http webhook receiver in"
          + " a child JVM killed --crashes times; not with --broker, --batch or --migrate-*; no receipts).")
  String source = "broker";

  @Option(names = "--events", defaultValue = "10000", description = "Events to publish (default: ${DEFAULT-VALUE}).")
  int events;

  @Option(names = "--duplicate-rate", defaultValue = "0.2",
      description = "Share of events that are producer retries of an earlier event (default: ${DEFAULT-VALUE}).")
  double duplicateRate;

  @Option(names = "--crashes", defaultValue = "3",
      description = "How many times the consumer is killed mid-stream (default: ${DEFAULT-VALUE}).")
  int crashes;

  @Option(names = "--batch", paramLabel = "N",
      description = "Most messages per database transaction in the consumer: 1 is per-message mode, N > 1"
          + " batch mode (one claim, one COMMIT per batch; default: the adapter's default, as in the README's"
          + " quick start).")
  @Nullable Integer batch;

  @Option(names = "--seed", description = "Random seed (default: time-based).")
  Long seed;

  @Option(names = "--timeout", defaultValue = "10m", converter = DurationArgument.class,
      description = "Give up on a broker after this long: 90s, 10m, 1h, 1h30m, or ISO-8601 such as PT10M"
          + " (default: ${DEFAULT-VALUE}).")
  Duration timeout;

  @Option(names = "--receipts", negatable = true, defaultValue = "true", fallbackValue = "true",
      description = "Also enqueue a receipt per order in the outbox, relay it (the relay killed --crashes times)"
          + " and apply it downstream; --no-receipts for the orders only (default: ${DEFAULT-VALUE};"
          + " not in a migration).")
  boolean receipts;

  @Option(names = "--replay-dead-letters", paramLabel = "N", arity = "0..1", defaultValue = "0", fallbackValue = "5",
      description = "N orders (5 when no N is given) fail non-retryably and are dead-lettered with their reason; once"
          + " everything else is applied the failure is switched off and idem-cli dead-letters replays them twice"
          + " (--keep, then again): each applied once, the second replay nothing (default: off).")
  int replayDeadLetters;

  @Option(names = "--rabbitmq-uri", paramLabel = "URI",
      description = "The RabbitMQ to run on, such as amqp://guest:guest@127.0.0.1:5672/%%2F (default:"
          + " IDEM_RABBITMQ_URI, else Docker, else the local server on 5672).")
  @Nullable String rabbitmqUri;

  @Option(names = "--database", paramLabel = "DATABASE", defaultValue = "postgresql",
      description = "The database of the store, the outbox and the ledger, with either --source: postgresql or"
          + " mariadb (MariaDB 10.6+ at IDEM_MARIADB_URL, else 127.0.0.1:3306 as root; default: ${DEFAULT-VALUE}).")
  String database = "postgresql";

  @Option(names = "--keep-schema", description = "Keep the demo's PostgreSQL schema (MariaDB: database) after a successful run.")
  boolean keepSchema;

  @Option(names = "--migrate-from", paramLabel = "BROKER",
      description = "Rehearse a migration from this broker (${COMPLETION-CANDIDATES}); needs --migrate-to.",
      completionCandidates = BrokerNames.class)
  @Nullable String migrateFrom;

  @Option(names = "--migrate-to", paramLabel = "BROKER",
      description = "Rehearse a migration to this broker (${COMPLETION-CANDIDATES}); needs --migrate-from.",
      completionCandidates = BrokerNames.class)
  @Nullable String migrateTo;

  static final class BrokerNames extends ArrayList<String> {
    private static final long serialVersionUID = 1L;

    BrokerNames() {
      super(DemoBrokers.NAMES);
    }
  }

  public static void main(String[] args) {
    System.exit(commandLine(new DemoMain()).execute(args));
  }

  /**
   * The command line for {@code demo}: a usage error prints that one error and a hint to
   * {@code --help} on standard error, not the whole usage, and exits with status 2.
   */
  public static CommandLine commandLine(DemoMain demo) {
    CommandLine commandLine = new CommandLine(demo);
    commandLine.setParameterExceptionHandler((e, args) -> {
      CommandLine cmd = e.getCommandLine();
      cmd.getErr().println(cmd.getColorScheme().errorText("idem-demo: " + e.getMessage()));
      cmd.getErr().println("try --help for the options and examples");
      cmd.getErr().flush();
      return CommandLine.ExitCode.USAGE;
    });
    return commandLine;
  }

  @Spec @Nullable CommandSpec spec;

  private CommandLine.ParameterException usageError(String message) {
    return new CommandLine.ParameterException(
        spec != null ? spec.commandLine() : new CommandLine(this), message);
  }

  /**
   * Checks the options together and normalizes the broker names to lower case.
   *
   * @throws CommandLine.ParameterException for a usage error, naming the option and the value
   */
  void validate() {
    if (events < 1) {
      throw usageError("--events must be >= 1, but was " + events);
    }
    if (!(duplicateRate >= 0 && duplicateRate < 1)) {
      throw usageError(
          "--duplicate-rate must be in [0, 1), but was " + duplicateRate);
    }
    if (crashes < 0) {
      throw usageError("--crashes must be >= 0, but was " + crashes);
    }
    if (batch != null && batch < 1) {
      throw usageError("--batch must be >= 1, but was " + batch);
    }
    if (batch != null && batch > 1 && (migrateFrom != null || migrateTo != null)) {
      throw usageError("--batch does not go with --migrate-from/--migrate-to: a migration runs per-message");
    }
    database = database.toLowerCase(Locale.ROOT);
    if (!DemoDatabase.KINDS.contains(database)) {
      throw usageError("--database must be one of " + DemoDatabase.KINDS + ", but was '" + database + "'");
    }
    source = source.toLowerCase(Locale.ROOT);
    if (!source.equals("broker") && !source.equals("webhooks")) {
      throw usageError("--source must be broker or webhooks, but was '" + source + "'");
    }
    if (source.equals("webhooks")
        && (broker != null || migrateFrom != null || migrateTo != null || batch != null && batch > 1)) {
      throw usageError("--source webhooks does not go with --broker, --batch or --migrate-from/--migrate-to:"
          + " the events come over HTTP, one transaction per request");
    }
    if (source.equals("webhooks") && replayDeadLetters > 0) {
      throw usageError("--replay-dead-letters does not go with --source webhooks: webhooks have no dead-letter destination");
    }
    if (replayDeadLetters < 0 || replayDeadLetters > events / 2) {
      throw usageError("--replay-dead-letters must be in [0, --events / 2], but was " + replayDeadLetters);
    }
    if (replayDeadLetters > 0 && (migrateFrom != null || migrateTo != null)) {
      throw usageError("--replay-dead-letters does not go with --migrate-from/--migrate-to");
    }
    if (broker != null && (migrateFrom != null || migrateTo != null)) {
      throw usageError(
          "--broker does not go with --migrate-from/--migrate-to: a migration runs on the two brokers they name");
    }
    broker = broker == null ? DEFAULT_BROKER : broker.toLowerCase(Locale.ROOT);
    migrateFrom = lowerCase(migrateFrom);
    migrateTo = lowerCase(migrateTo);
    if (timeout.isZero() || timeout.isNegative()) {
      throw usageError("--timeout must be positive, but was " + timeout);
    }
    if ((migrateFrom == null) != (migrateTo == null)) {
      throw usageError(
          "--migrate-from and --migrate-to go together, but only " + (migrateFrom == null ? "--migrate-to" : "--migrate-from")
              + " was given");
    }
    List<String> named = migrateFrom == null || migrateTo == null ? List.of(broker) : List.of(migrateFrom, migrateTo);
    for (String name : named) {
      if (!DemoBrokers.NAMES.contains(name) && !(migrateFrom == null && name.equals("all"))) {
        throw usageError((migrateFrom == null ? "--broker" : "--migrate-from/--migrate-to") + " must be one of "
            + DemoBrokers.NAMES + (migrateFrom == null ? " or all" : "") + ", but was '" + name + "'");
      }
    }
    if (migrateFrom != null && migrateFrom.equals(migrateTo)) {
      throw usageError(
          "--migrate-from and --migrate-to must differ, but both were '" + migrateFrom + "'");
    }
  }

  @Override
  public Integer call() throws Exception {
    validate();
    try {
      // read here and by the child JVMs; restored after, for the next run in this JVM (a test's)
      return DemoDatabase.on(database, this::run);
    } catch (MissingPrerequisite e) {
      return environmentError(String.valueOf(e.getMessage()));
    }
  }

  /** Prints {@code message} as one {@code idem-demo:} line on standard error: status 2, no stack trace. */
  private int environmentError(String message) {
    PrintWriter err = spec != null ? spec.commandLine().getErr() : new PrintWriter(System.err, true);
    err.println("idem-demo: " + message);
    err.flush();
    return CommandLine.ExitCode.USAGE;
  }

  /** The broker {@code name}, at {@code --rabbitmq-uri} when given and it is RabbitMQ. */
  private DemoBroker broker(String name) {
    return DemoBrokers.create(name, rabbitmqUri != null ? Map.of("rabbitmq-uri", rabbitmqUri) : Map.of());
  }

  /**
   * With {@code IDEM_POSTGRES_URL} set, checks that PostgreSQL answers there before any broker
   * starts: a wrong URL is the user's to fix, never replaced by a PostgreSQL of the demo's choice.
   */
  private static void checkDatabase() {
    if (DemoDatabase.mariadb()) {
      try {
        MariaDbFixture.shared();
      } catch (ServerUnavailableException e) {
        throw new MissingPrerequisite(String.valueOf(e.getMessage()), e);
      }
      return;
    }
    String url = System.getenv("IDEM_POSTGRES_URL");
    if (url == null || url.isBlank()) {
      return; // 127.0.0.1:5432, else an embedded PostgreSQL: the fixture always finds one
    }
    try {
      PostgresFixture.shared();
    } catch (ServerUnavailableException e) {
      throw new MissingPrerequisite(String.valueOf(e.getMessage()).replaceFirst("\\.?\\s*$", "") + ": start PostgreSQL there, correct IDEM_POSTGRES_URL (and"
          + " IDEM_POSTGRES_USER/IDEM_POSTGRES_PASSWORD), or unset it for 127.0.0.1:5432 or an embedded PostgreSQL", e);
    }
  }

  private int run() throws Exception {
    // The demo uses IDEM_POSTGRES_URL, else 127.0.0.1:5432, else an embedded PostgreSQL (MariaDB:
    // IDEM_MARIADB_URL, else 127.0.0.1:3306): no containers.
    System.setProperty("idem.testcontainers", "false");
    System.setProperty("idem.fixtures.announce", "false"); // the demo says where each server is itself
    checkDatabase();
    long baseSeed = seed != null ? seed : System.nanoTime();
    if (migrateFrom != null) {
      return migrate(baseSeed);
    }
    if (source.equals("webhooks")) {
      Ledger ledger = new WebhookRun(events, duplicateRate, crashes, baseSeed, timeout, keepSchema, out::println).run();
      out.println(ledger.describe());
      out.flush();
      return ledger.exitStatus();
    }
    String chosen = broker != null ? broker : DEFAULT_BROKER;
    List<String> names = chosen.equals("all") ? DemoBrokers.NAMES : List.of(chosen);
    List<Ledger> ledgers = new ArrayList<>();
    List<String> modes = new ArrayList<>();
    List<String> errors = new ArrayList<>();
    for (String name : names) {
      try (DemoBroker b = broker(name)) {
        out.println("[" + name + "] " + b.start());
        int maxBatchSize = batch != null ? batch : b.defaultMaxBatchSize();
        Ledger ledger = LedgerRun.builder(b).events(events).duplicateRate(duplicateRate).crashes(crashes)
            .seed(baseSeed).timeout(timeout).keepSchema(keepSchema).maxBatchSize(maxBatchSize).receipts(receipts)
            .replayDeadLetters(replayDeadLetters)
            .output(out::println)
            .build().run();
        out.println(ledger.describe());
        ledgers.add(ledger);
        modes.add(name + " " + ledger.mode());
      } catch (RuntimeException e) {
        if (names.size() == 1) {
          throw e;
        }
        // with --broker all, one broker that cannot be had must not hide the others' ledgers
        String why = e instanceof MissingPrerequisite ? e.getMessage() : e.toString();
        errors.add(name + ": " + why);
        out.println("[" + name + "] FAILED: " + why);
      }
    }
    if (names.size() > 1) {
      out.println();
      out.println("mode: " + String.join(", ", modes));
      out.print(Ledger.table(ledgers));
      out.println("deliveries and duplicates are estimates, at least the figure shown; see --help for how each"
          + " figure is counted");
      if (ledgers.stream().anyMatch(Ledger::timedOut)) {
        out.println("(n) in a missing column: not yet applied or received when --timeout ran out (TIMED OUT);"
            + " nothing doubled unless a doubled column says so");
      }
      errors.forEach(error -> out.println("not run: " + error));
    }
    out.flush();
    if (!errors.isEmpty() || ledgers.stream().anyMatch(l -> l.exitStatus() == 1)) {
      return 1;
    }
    return ledgers.stream().anyMatch(l -> l.exitStatus() == Ledger.EXIT_TIMED_OUT) ? Ledger.EXIT_TIMED_OUT : 0;
  }

  private static @Nullable String lowerCase(@Nullable String name) {
    return name == null ? null : name.toLowerCase(Locale.ROOT);
  }

  private int migrate(long baseSeed) throws InterruptedException {
    try (DemoBroker from = broker(Objects.requireNonNull(migrateFrom, "--migrate-from"));
        DemoBroker to = broker(Objects.requireNonNull(migrateTo, "--migrate-to"))) {
      out.println("[" + from.name() + "] " + from.start());
      out.println("[" + to.name() + "] " + to.start());
      MigrationLedger ledger = MigrationRun.builder(from, to).events(events).duplicateRate(duplicateRate)
          .crashes(crashes).seed(baseSeed).timeout(timeout).keepSchema(keepSchema).output(out::println)
          .build().run();
      out.println(ledger.describe());
      out.flush();
      return ledger.exitStatus();
    }
  }
}
