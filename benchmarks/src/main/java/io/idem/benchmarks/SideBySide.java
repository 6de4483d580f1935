package io.idem.benchmarks;

import io.idem.fixtures.ChildJvm;
import io.idem.fixtures.MariaDbFixture;
import io.idem.fixtures.PostgresFixture;
import io.idem.kafka.KafkaConsumerConfig;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.store.jdbc.RetentionJob;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The side-by-side benchmark: one PostgreSQL, one broker ({@code --broker kafka|rabbitmq|sqs|jms},
 * see {@link BenchBroker}), the same stream of OrderPaid events (with producer retries) consumed
 * by each {@link Variant} in interleaved rounds, each run on a fresh topic or queue and fresh
 * tables; per run one {@code RESULT broker=… variant=… events/s=… doubled=… missing=…} line
 * (events/s from the first record seen to the last one settled; the ledger: effects, doubled,
 * missing) and per round {@code RATIO broker=… round=… <variant>/<baseline>=…} lines. Optional
 * parts: external peer commands run in the same rounds ({@code --peer}); on Kafka only, crash runs
 * (the consumer in a child JVM SIGKILLed {@code --crash} times), the memory run ({@code
 * --memory-events}), the consumer's latency with and without a retention purge running ({@code
 * --purge-markers}) and {@code --concurrency}. With {@code --databases postgresql,mariadb} every
 * round runs the variants on each database (MariaDB's runs named {@code <variant>@mariadb}, their
 * ratios taken against the same database's plain consumers and against the same variant on
 * PostgreSQL); the crash, memory, purge and concurrency runs stay on PostgreSQL. See BENCHMARKS.md.
 */
@Command(name = "side-by-side", mixinStandardHelpOptions = true,
    description = "Idem against plain consumers (and peers) on one PostgreSQL and one broker.")
public final class SideBySide implements Callable<Integer> {
  private static final Pattern PEER_RATE = Pattern.compile("events/s=([0-9.]+)");

  @Option(names = "--broker", defaultValue = "kafka", description = "kafka, rabbitmq, sqs or jms (default ${DEFAULT-VALUE})")
  String brokerName;
  @Option(names = "--events", defaultValue = "10000", description = "records published per run (default ${DEFAULT-VALUE})")
  int events;
  @Option(names = "--retry-rate", defaultValue = "0.2", description = "share of producer retries (default ${DEFAULT-VALUE})")
  double retryRate;
  @Option(names = "--partitions", defaultValue = "2") int partitions;
  @Option(names = "--rounds", defaultValue = "3", description = "interleaved rounds (default ${DEFAULT-VALUE})")
  int rounds;
  @Option(names = "--variants", split = ",", defaultValue = "idem,idem-per-message,idem-batch,idem-batch-handler,raw-tx,raw-batch")
  List<String> variants;
  @Option(names = "--max-batch-size", defaultValue = "0", description = "the batch variants' maxBatchSize (0: the"
      + " broker's default: Kafka 100, RabbitMQ, SQS and JMS 10; RabbitMQ's batch variants prefetch twice as many)")
  int maxBatchSize;

  @Option(names = "--purge-batch-size", defaultValue = "0",
      description = "the paced purge's RetentionJob batchSize (0: its default)")
  int purgeBatchSize;

  @Option(names = "--purge-pause-ratio", defaultValue = "0",
      description = "the paced purge's RetentionJob pauseRatio (0: its default)")
  double purgePauseRatio;

  @Option(names = "--commit-interval-ms", defaultValue = "-1",
      description = "the Idem variants' Kafka commitInterval in ms (-1: the adapter's default, 100 ms; 0: after every poll)")
  long commitIntervalMillis;
  @Option(names = "--max-poll-records", defaultValue = "0", description = "Kafka's max.poll.records for Idem's variants"
      + " and the plain consumers (0: each one's default: Idem 100, the plain KafkaConsumer 500)")
  int maxPollRecords;
  @Option(names = "--statements", description = "print per run the statements PostgreSQL executed, per event"
      + " (pg_stat_statements: it must be preloaded and created; server-wide counts, so a PostgreSQL of the"
      + " benchmark's own)")
  boolean statements;
  @Option(names = "--profile", description = "a directory: per run, a wall-clock profile of every thread from the"
      + " consumer's start to its last settled message, <run>.collapsed (async-profiler's jar on the class path)")
  Path profileDir;
  @Option(names = "--peer", description = "NAME=SHELL COMMAND run in each round before the variants; its"
      + " output's 'RESULT … events/s=N' is the peer's rate (e.g. the Camel harness); {bootstrap} (the broker's"
      + " address: Kafka bootstrap servers, AMQP URI, SQS endpoint, JMS URL), {jdbc-url}, {events} and {seed} in it"
      + " are replaced by this run's")
  Map<String, String> peers = new LinkedHashMap<>();
  @Option(names = "--baseline", description = "the peer the ratios are taken against (default: the first --peer)")
  String baseline;
  @Option(names = "--warmup-events", defaultValue = "2000", description = "events of one unrecorded warm-up run"
      + " of each variant before round 1 (JIT, connections; 0: none; default ${DEFAULT-VALUE})")
  int warmupEvents;
  @Option(names = "--crash", defaultValue = "0", description = "SIGKILLs per crash run (0: no crash runs)")
  int crashes;
  @Option(names = "--crash-rounds", defaultValue = "1") int crashRounds;
  @Option(names = "--crash-variants", split = ",", defaultValue = "idem,idem-batch,idem-batch-handler")
  List<String> crashVariants;
  @Option(names = "--memory-events", defaultValue = "0", description = "events of the memory run (0: none), e.g. 1000000")
  int memoryEvents;
  @Option(names = "--memory-variant", defaultValue = "idem") String memoryVariant;
  @Option(names = "--child-heap", defaultValue = "256m", description = "-Xmx of the child consumer JVM")
  String childHeap;
  @Option(names = "--purge-markers", defaultValue = "0", description = "expired markers for the purge-latency run (0: none)")
  int purgeMarkers;
  @Option(names = "--concurrency", defaultValue = "0", description = "the concurrency run's concurrency(n) (0: none)")
  int concurrency;
  @Option(names = "--jdbc-url", description = "default: the fixtures' PostgreSQL (IDEM_POSTGRES_URL, ...)") String jdbcUrl;
  @Option(names = "--jdbc-user", defaultValue = "postgres") String jdbcUser;
  @Option(names = "--jdbc-password", defaultValue = "") String jdbcPassword;
  @Option(names = "--databases", split = ",", defaultValue = "postgresql", description = "postgresql and/or mariadb:"
      + " the throughput rounds run every variant on each (default ${DEFAULT-VALUE})")
  List<String> databases;
  @Option(names = "--mariadb-url", description = "a MariaDB server's URL without a database (default: the fixtures'"
      + " MariaDB: IDEM_MARIADB_URL, Docker, the local server on 3306)") String mariaDbUrl;
  @Option(names = "--pool-auto-commit", defaultValue = "true", arity = "1", description = "whether the runs' pools hand"
      + " out connections in auto-commit mode (HikariCP's default; false: off, and Idem's MyBatis transactions skip"
      + " their auto-commit reset at close: no 'set autocommit' round trips on MariaDB; default ${DEFAULT-VALUE})")
  boolean poolAutoCommit;
  @Option(names = "--mariadb-user", defaultValue = "root") String mariaDbUser;
  @Option(names = "--mariadb-password", defaultValue = "") String mariaDbPassword;
  @Option(names = "--bootstrap", description = "default: the fixtures' Kafka (IDEM_KAFKA_BOOTSTRAP, else an in-JVM KRaft broker)")
  String bootstrap;
  @Option(names = "--rabbitmq-uri", description = "default: the fixtures' RabbitMQ (IDEM_RABBITMQ_URI, else 127.0.0.1:5672)")
  String rabbitmqUri;
  @Option(names = "--sqs-endpoint", description = "default: the fixtures' SQS (IDEM_SQS_ENDPOINT, else an in-JVM ElasticMQ);"
      + " JMS: IDEM_JMS_URL, else an embedded Artemis")
  String sqsEndpoint;
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;
  @Option(names = "--pool", defaultValue = "4") int pool;
  @Option(names = "--seed", defaultValue = "42") long seed;
  @Option(names = "--timeout", defaultValue = "PT15M", converter = DurationConverter.class) Duration timeout;

  private final PrintStream out;
  private final List<Db> dbs = new ArrayList<>();
  private BenchBroker broker;
  private long postmasterPid;
  private final List<RunResult> results = new ArrayList<>();
  private final Map<String, String> notes = new LinkedHashMap<>();

  /** A command printing to {@code out}. */
  SideBySide(PrintStream out) {
    this.out = out;
  }

  public static void main(String[] args) {
    System.setProperty("idem.testcontainers", System.getProperty("idem.testcontainers", "false"));
    int code = new CommandLine(new SideBySide(new PrintStream(System.out, true, StandardCharsets.UTF_8))).execute(args);
    System.exit(code);
  }

  /** The runs measured so far, in order (peers included, named {@code peer:NAME}). */
  List<RunResult> results() {
    return List.copyOf(results);
  }

  /**
   * A database the throughput rounds run on: its server URL and credentials, and the suffix of its
   * runs' names ({@code ""} on PostgreSQL, {@code @mariadb}).
   */
  record Db(String name, String url, String user, String password, String suffix) {}

  /** The database suffix of a run's name ({@code idem@mariadb} → {@code @mariadb}), "" for PostgreSQL's. */
  static String suffixOf(String runName) {
    int at = runName.indexOf('@');
    return at < 0 ? "" : runName.substring(at);
  }

  /** One measured run ({@code ledger} is null for a peer: its own output has it). */
  record RunResult(int round, String name, int events, double eventsPerSecond, long wallMillis,
      BenchDatabase.@Nullable Ledger ledger, String load) {}

  @Override
  public Integer call() throws Exception {
    refuseKafkaOnlyOptions();
    if (jdbcUrl == null) {
      PostgresFixture pg = PostgresFixture.shared();
      jdbcUrl = pg.jdbcUrl();
      jdbcUser = pg.user();
      jdbcPassword = pg.password();
    }
    BenchDatabase.poolAutoCommit = poolAutoCommit;
    for (String database : databases) {
      if (database.equals("postgresql")) {
        dbs.add(new Db(database, jdbcUrl, jdbcUser, jdbcPassword, ""));
      } else if (database.equals("mariadb")) {
        if (mariaDbUrl == null) {
          MariaDbFixture mariaDb = MariaDbFixture.shared();
          mariaDbUrl = mariaDb.jdbcUrl();
          mariaDbUser = mariaDb.user();
          mariaDbPassword = mariaDb.password();
        }
        dbs.add(new Db(database, mariaDbUrl, mariaDbUser, mariaDbPassword, "@mariadb"));
      }
    }
    broker = brokerName.equals("kafka") ? KafkaBench.connect(bootstrap).partitions(partitions)
        : BenchBroker.of(brokerName, brokerName.equals("rabbitmq") ? rabbitmqUri : sqsEndpoint);
    try {
      bootstrap = broker.address();
      if (maxBatchSize <= 0) {
        maxBatchSize = broker.defaultBatchSize();
      }
      postmasterPid = Postgres.postmasterPid(jdbcUrl, jdbcUser, jdbcPassword);
      out.println("machine: " + Runtime.getRuntime().availableProcessors() + " CPUs, " + System.getProperty("java.vm.name")
          + " " + System.getProperty("java.version") + ", PostgreSQL " + jdbcUrl + ", " + broker.describe()
          + ", batch variants maxBatchSize " + maxBatchSize);
      out.println("postgres: " + Postgres.settings(jdbcUrl, jdbcUser, jdbcPassword)
          + (postmasterPid > 0 ? " postmaster_pid=" + postmasterPid : " (not on this machine: its CPU is not separated)"));
      for (Db db : dbs) {
        if (db.name().equals("mariadb")) {
          out.println("mariadb: " + MariaDbSettings.describe(db.url(), db.user(), db.password())
              + " (its CPU counts as others' in cpu=[…])");
        }
      }
      runAll();
      summary();
    } finally {
      broker.close();
    }
    return 0;
  }

  /** The runs that need Kafka (a child JVM's consumer group lag, Kafka's commit interval) refuse other brokers. */
  private void refuseKafkaOnlyOptions() {
    if (!List.of("kafka", "rabbitmq", "sqs", "jms").contains(brokerName)) {
      throw new CommandLine.ParameterException(spec.commandLine(),
          "--broker must be one of kafka, rabbitmq, sqs, jms, but was '" + brokerName + "'");
    }
    for (String database : databases) {
      if (!List.of("postgresql", "mariadb").contains(database)) {
        throw new CommandLine.ParameterException(spec.commandLine(),
            "--databases takes postgresql and/or mariadb, but got '" + database + "'");
      }
    }
    if (mariaDbUrl != null && !databases.contains("mariadb")) {
      throw new CommandLine.ParameterException(spec.commandLine(),
          "--mariadb-url is for --databases with mariadb, but --databases was " + String.join(",", databases));
    }
    Map<String, Boolean> kafkaOnly = new LinkedHashMap<>();
    kafkaOnly.put("--crash", crashes > 0);
    kafkaOnly.put("--memory-events", memoryEvents > 0);
    kafkaOnly.put("--purge-markers", purgeMarkers > 0);
    kafkaOnly.put("--concurrency", concurrency > 1);
    kafkaOnly.put("--commit-interval-ms", commitIntervalMillis >= 0);
    kafkaOnly.put("--max-poll-records", maxPollRecords > 0);
    kafkaOnly.put("--bootstrap", bootstrap != null);
    kafkaOnly.forEach((option, given) -> {
      if (given && !brokerName.equals("kafka")) {
        throw new CommandLine.ParameterException(spec.commandLine(),
            option + " runs on --broker kafka only so far, but --broker was " + brokerName);
      }
    });
    if (rabbitmqUri != null && !brokerName.equals("rabbitmq") || sqsEndpoint != null && !brokerName.equals("sqs")) {
      throw new CommandLine.ParameterException(spec.commandLine(), (rabbitmqUri != null ? "--rabbitmq-uri" : "--sqs-endpoint")
          + " is for --broker " + (rabbitmqUri != null ? "rabbitmq" : "sqs") + ", but --broker was " + brokerName);
    }
  }

  private void runAll() throws Exception {
    OrderStream stream = OrderStream.generate(events, retryRate, seed);
    if (warmupEvents > 0 && (rounds > 0 || purgeMarkers > 0)) {
      OrderStream warmup = OrderStream.generate(warmupEvents, retryRate, seed - 1);
      for (Db db : dbs) {
        for (String v : variants) {
          measure(0, Variant.of(v), warmup, 1, db);
        }
      }
      results.clear();
      out.println("(round 0 was the warm-up: not in the summary)");
    }
    for (int round = 1; round <= rounds; round++) {
      for (Map.Entry<String, String> peer : peers.entrySet()) {
        runPeer(round, peer.getKey(), peer.getValue());
      }
      for (Db db : dbs) {
        for (String v : variants) {
          measure(round, Variant.of(v), stream, 1, db);
        }
      }
      ratios(round);
    }
    if (concurrency > 1) {
      measure(1, Variant.IDEM, stream, concurrency, postgres());
    }
    if (purgeMarkers > 0) {
      purgeLatency(stream);
    }
    for (int round = 1; round <= crashRounds && crashes > 0; round++) {
      for (String v : crashVariants) {
        crashRun(round, Variant.of(v), OrderStream.generate(events, retryRate, seed + round));
      }
    }
    if (memoryEvents > 0) {
      memoryRun(Variant.of(memoryVariant), OrderStream.generate(memoryEvents, retryRate, seed));
    }
  }

  // ---- throughput -------------------------------------------------------------------------

  /** The PostgreSQL of the runs that stay there (concurrency, purge, crash, memory). */
  private Db postgres() {
    return new Db("postgresql", jdbcUrl, jdbcUser, jdbcPassword, "");
  }

  private void measure(int round, Variant variant, OrderStream stream, int workers, Db database) throws Exception {
    String name = variant.label + (workers > 1 ? "-concurrency" + workers : "") + database.suffix();
    String load = Load.now();
    String id = runId(name);
    try (BenchDatabase db = BenchDatabase.create(database.url(), database.user(), database.password(), id, pool)) {
      db.recordExpected(stream.orderIds());
      broker.create(id);
      try {
        broker.publish(id, stream);
        Progress progress = new Progress(stream.size());
        StatementCounts counts = statements && database.suffix().isEmpty()
            ? new StatementCounts(jdbcUrl, jdbcUser, jdbcPassword) : null;
        if (counts != null) {
          counts.reset();
        }
        CpuShares cpu = new CpuShares(postmasterPid).begin();
        WallProfile profile = WallProfile.start(profileDir, id);
        long cpuNanos;
        String shares;
        try (AutoCloseable consumer = broker.start(variant,
            new BenchBroker.Run(id, maxBatchSize, workers, commitIntervalMillis, maxPollRecords), db, progress)) {
          progress.await(stream.size(), timeout);
          if (profile != null) {
            profile.stop();
          }
          cpuNanos = consumerThreadCpuNanos(id);
          shares = cpu.end();
        }
        if (counts != null) {
          counts.report(stream.size()).forEach(line -> out.println("STATEMENTS " + name + " " + line));
        }
        record(new RunResult(round, name, stream.size(), progress.eventsPerSecond(), progress.wallMillis(), db.ledger(),
            load), "p50_ms=" + fmt(progress.latencyMillis(0.5)) + " p99_ms=" + fmt(progress.latencyMillis(0.99))
            + " consumer_cpu_us_per_event=" + fmt(cpuNanos / 1000.0 / stream.size()) + " cpu=[" + shares + "]");
      } finally {
        broker.delete(id);
      }
    }
  }

  /**
   * CPU time used so far by the consumer threads of run {@code id}: Idem's adapter threads named
   * after the run's topic, group or queue ({@code idem-kafka-<group>-…}, {@code
   * idem-rabbit-worker-<queue>-…} and {@code idem-rabbit-settle-…}, {@code idem-sqs-poll-<queue>}
   * and its workers and timer, {@code idem-jms-<queue>-…}) and the plain consumer's {@code
   * raw-consumer-<destination>}; the broker clients' own I/O threads are not counted. On a loaded
   * machine a message's CPU time is stretched by the waits for a core, so it is recorded beside
   * events/s.
   */
  private static long consumerThreadCpuNanos(String id) {
    java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
    long sum = 0;
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      String n = t.getName();
      if ((n.startsWith("idem-") || n.startsWith("raw-consumer-")) && n.contains(id)) {
        sum += Math.max(0, mx.getThreadCpuTime(t.getId()));
      }
    }
    return sum;
  }

  private void runPeer(int round, String name, String command) throws Exception {
    String load = Load.now();
    String resolved = command.replace("{bootstrap}", broker.address()).replace("{jdbc-url}", jdbcUrl)
        .replace("{events}", Integer.toString(events)).replace("{seed}", Long.toString(seed));
    Process p = new ProcessBuilder("bash", "-c", resolved).redirectErrorStream(true).start();
    Path log = Files.createTempFile("peer-" + name + "-r" + round, ".log");
    double rate = Double.NaN;
    String ledger = "";
    try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
      for (String line; (line = in.readLine()) != null; ) {
        Files.writeString(log, line + "\n", java.nio.file.StandardOpenOption.APPEND);
        Matcher m = PEER_RATE.matcher(line);
        if (line.startsWith("RESULT") && m.find()) {
          rate = Double.parseDouble(m.group(1));
        }
        if (line.startsWith("LEDGER")) {
          ledger = line.substring("LEDGER".length()).trim();
        }
      }
    }
    int rc = p.waitFor();
    out.println("RESULT broker=" + broker.name() + " variant=peer:" + name + " events/s=" + fmt(rate)
        + " doubled=- missing=- round=" + round + " rc=" + rc + " load=[" + load + "] | LEDGER " + ledger + " (log " + log + ")");
    results.add(new RunResult(round, "peer:" + name, events, rate, 0, null, load));
  }

  private void record(RunResult r, String extra) {
    results.add(r);
    BenchDatabase.Ledger l = r.ledger();
    out.println("RESULT broker=" + broker.name() + " variant=" + r.name() + " events/s=" + fmt(r.eventsPerSecond())
        + " doubled=" + (l == null ? "-" : l.doubled()) + " missing=" + (l == null ? "-" : l.missing())
        + " round=" + r.round() + " events=" + r.events() + " wall_ms=" + r.wallMillis() + " " + extra
        + " load=[" + r.load() + "] | LEDGER " + l);
  }

  /**
   * The round's ratios: every run to the plain per-message consumer ({@code raw-tx}), Idem's batch
   * variants also to the batched plain consumer ({@code raw-batch}), and every variant to the
   * baseline peer when there is one.
   */
  private void ratios(int round) {
    String base = basePeer();
    for (RunResult r : results) {
      if (r.round() != round || r.name().startsWith("peer:")) {
        continue;
      }
      String suffix = suffixOf(r.name());
      List<String> against = new ArrayList<>();
      if (!r.name().equals(Variant.RAW_PER_RECORD.label + suffix)) {
        against.add(Variant.RAW_PER_RECORD.label + suffix);
      }
      if (r.name().startsWith("idem-batch")) {
        against.add(Variant.RAW_BATCHED.label + suffix);
      }
      if (!suffix.isEmpty()) {
        against.add(r.name().substring(0, r.name().length() - suffix.length())); // the same on PostgreSQL
      }
      if (base != null) {
        against.add(base);
      }
      for (String a : against) {
        results.stream().filter(o -> o.round() == round && o.name().equals(a)).findFirst().ifPresent(o ->
            out.println("RATIO broker=" + broker.name() + " round=" + round + " " + r.name() + "/" + a + "="
                + String.format(Locale.ROOT, "%.2f", r.eventsPerSecond() / o.eventsPerSecond())));
      }
    }
  }

  private @Nullable String basePeer() {
    return baseline != null ? "peer:" + baseline : peers.isEmpty() ? null : "peer:" + peers.keySet().iterator().next();
  }

  // ---- retention purge against consumer latency ------------------------------------------

  /**
   * The consumer's latency with no purge, while {@link RetentionJob}'s paced pass (its defaults,
   * what a user runs) deletes the expired markers, and while plain 1,000-row batches are deleted
   * back to back (what the pacing exists to avoid).
   */
  private void purgeLatency(OrderStream stream) throws Exception {
    for (String purging : new String[] {"no-purge", "with-purge-paced", "with-purge-back-to-back"}) {
      String name = "idem-" + purging;
      String load = Load.now();
      String id = runId(name);
      try (BenchDatabase db = BenchDatabase.create(jdbcUrl, jdbcUser, jdbcPassword, id, pool + 1)) {
        db.recordExpected(stream.orderIds());
        db.insertExpiredMarkers("expired-group", purgeMarkers, 30);
        Topics.create(bootstrap, id, partitions);
        stream.publish(bootstrap, id);
        Progress progress = new Progress(stream.size());
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong purged = new AtomicLong();
        AtomicLong purgeNanos = new AtomicLong();
        MyBatisProcessedEventStore store = MyBatisProcessedEventStore.builder(Postgres.sessions(db)).build();
        RetentionJob.Builder paced = RetentionJob.builder(store); // its defaults unless told otherwise
        if (purgeBatchSize > 0) {
          paced.batchSize(purgeBatchSize);
        }
        if (purgePauseRatio > 0) {
          paced.pauseRatio(purgePauseRatio);
        }
        RetentionJob job = paced.build();
        Thread purger = new Thread(() -> {
          long start = System.nanoTime();
          if (purging.endsWith("paced")) {
            purged.set(job.purgeExpired());
          } else {
            int n;
            do {
              n = store.purge(Instant.now().minus(Duration.ofDays(7)), 1000);
              purged.addAndGet(n);
            } while (n > 0 && !stop.get());
          }
          purgeNanos.set(System.nanoTime() - start);
        }, "purge");
        boolean purges = !purging.equals("no-purge");
        try (AutoCloseable consumer = Consumers.start(Variant.IDEM,
            new Consumers.Setup(bootstrap, id, id, maxBatchSize, 1, false, commitIntervalMillis, maxPollRecords), db, progress)) {
          if (purges) {
            purger.start();
          }
          progress.await(stream.size(), timeout);
          stop.set(true);
          job.close(); // ends a paced pass after its batch in hand
          if (purges) {
            purger.join();
          }
        }
        record(new RunResult(1, name, stream.size(), progress.eventsPerSecond(), progress.wallMillis(), db.ledger(), load),
            "p50_ms=" + fmt(progress.latencyMillis(0.5)) + " p99_ms=" + fmt(progress.latencyMillis(0.99))
                + " purged=" + purged.get() + " purge_ms=" + purgeNanos.get() / 1_000_000
                + " purge_running_through_run=" + (purges && purged.get() < purgeMarkers));
        notes.put(name, "p99_ms=" + fmt(progress.latencyMillis(0.99)) + " purged=" + purged.get());
        Topics.delete(bootstrap, id);
      }
    }
  }

  // ---- crash runs and the memory run (a child JVM) ---------------------------------------

  private void crashRun(int round, Variant variant, OrderStream stream) throws Exception {
    String name = variant.label + "-crash" + crashes;
    String load = Load.now();
    String id = runId(name);
    Random random = new Random(seed + round);
    try (BenchDatabase db = BenchDatabase.create(jdbcUrl, jdbcUser, jdbcPassword, id, 2)) {
      db.recordExpected(stream.orderIds());
      Topics.create(bootstrap, id, partitions);
      stream.publish(bootstrap, id);
      long start = System.nanoTime();
      int unique = stream.orderIds().size();
      int kills = 0;
      for (int k = 1; k <= crashes; k++) {
        // a kill target in the k-th slice of the run, at a random effect count
        long target = (long) unique * k / (crashes + 1) + random.nextInt(Math.max(1, unique / (crashes + 1) / 2));
        ChildJvm child = child(variant, id, true, false);
        Waits.until(() -> db.effects() >= target || !child.isAlive(), timeout, "effects >= " + target);
        if (!child.isAlive()) {
          throw new IllegalStateException("the consumer child died by itself: " + child.lines());
        }
        child.kill();
        kills++;
        out.println("  crash: SIGKILL " + k + " of " + crashes + " at effects=" + db.effects() + " (target " + target + ")");
      }
      ChildJvm last = child(variant, id, true, false);
      Waits.until(() -> Topics.lag(bootstrap, id, id) == 0, timeout, "consumer group " + id + " has no lag");
      last.stop(Duration.ofSeconds(30));
      long wall = (System.nanoTime() - start) / 1_000_000;
      BenchDatabase.Ledger ledger = db.ledger();
      record(new RunResult(round, name, stream.size(), stream.size() * 1000.0 / Math.max(1, wall), wall, ledger, load),
          "kills=" + kills);
      Topics.delete(bootstrap, id);
    }
  }

  private void memoryRun(Variant variant, OrderStream stream) throws Exception {
    String name = variant.label + "-memory";
    String load = Load.now();
    String id = runId(name);
    try (BenchDatabase db = BenchDatabase.create(jdbcUrl, jdbcUser, jdbcPassword, id, 2)) {
      db.recordExpected(stream.orderIds());
      Topics.create(bootstrap, id, partitions);
      stream.publish(bootstrap, id);
      long start = System.nanoTime();
      ChildJvm child = child(variant, id, false, true);
      long[] rssPeakKb = {0};
      Waits.until(() -> {
        rssPeakKb[0] = Math.max(rssPeakKb[0], Load.rssHighWaterKb(child.pid()));
        return Topics.lag(bootstrap, id, id) == 0;
      }, timeout.multipliedBy(4), "consumer group " + id + " has no lag");
      long wall = (System.nanoTime() - start) / 1_000_000;
      rssPeakKb[0] = Math.max(rssPeakKb[0], Load.rssHighWaterKb(child.pid()));
      // the heap pools' peak is printed by the child's shutdown hook, after its consumer closed
      child.stop(KafkaConsumerConfig.DEFAULT_SHUTDOWN_TIMEOUT.plusSeconds(30));
      long heapSamplePeak = child.lines().stream().filter(l -> l.startsWith("HEAP ")).mapToLong(l -> Long.parseLong(l.substring(5)))
          .max().orElse(-1);
      long heapPoolPeak = child.lines().stream().filter(l -> l.startsWith("HEAP_PEAK ")).mapToLong(l -> Long.parseLong(l.substring(10)))
          .max().orElse(-1);
      BenchDatabase.Ledger ledger = db.ledger();
      String mem = "Xmx=" + childHeap + " heap_peak_MiB=" + (heapPoolPeak < 0 ? "n/a" : heapPoolPeak / (1 << 20))
          + " heap_sampled_peak_MiB="
          + heapSamplePeak / (1 << 20) + " rss_peak_MiB=" + rssPeakKb[0] / 1024;
      notes.put(name, mem);
      record(new RunResult(1, name, stream.size(), stream.size() * 1000.0 / Math.max(1, wall), wall, ledger, load), mem);
      Topics.delete(bootstrap, id);
    }
  }

  private ChildJvm child(Variant variant, String id, boolean crashRun, boolean memory) {
    List<String> args = new ArrayList<>(List.of("--variant", variant.label, "--bootstrap", bootstrap, "--topic", id,
        "--group", id, "--jdbc-url", jdbcUrl, "--jdbc-user", jdbcUser, "--jdbc-password", jdbcPassword,
        "--schema", id, "--max-batch-size", Integer.toString(maxBatchSize)));
    if (crashRun) {
      args.add("--crash-run");
    }
    if (memory) {
      args.add("--memory-report");
    }
    ChildJvm child = ChildJvm.start(id, ConsumerChild.class, List.of("-Xmx" + childHeap, "-XX:+UseSerialGC"), args,
        Map.of(), line -> {
          if (!line.contains("] HEAP") && !line.contains("] READY") && !line.contains("] STOPPED")) {
            out.println("  " + line);
          }
        });
    return child;
  }

  // ---- the summary -------------------------------------------------------------------------

  private void summary() {
    out.println();
    out.println("SUMMARY broker=" + broker.name() + " (medians over rounds; ratio = median of the per-round ratios)");
    String base = basePeer();
    List<String> names = results.stream().map(RunResult::name).distinct().toList();
    out.println(String.format(Locale.ROOT, "%-28s %10s %12s %12s %12s %12s  %s", "run", "events/s",
        base == null ? "" : "x " + base.substring(5), "x raw-tx", "x raw-batch", "x postgresql", "ledger (last round)"));
    for (String n : names) {
      List<RunResult> rs = results.stream().filter(r -> r.name().equals(n)).toList();
      double median = median(rs.stream().mapToDouble(RunResult::eventsPerSecond).toArray());
      RunResult last = rs.get(rs.size() - 1);
      String suffix = n.startsWith("peer:") ? "" : suffixOf(n);
      out.println(String.format(Locale.ROOT, "%-28s %10.0f %12s %12s %12s %12s  %s", n, median,
          base == null ? "" : ratio(n, base), ratio(n, Variant.RAW_PER_RECORD.label + suffix),
          ratio(n, Variant.RAW_BATCHED.label + suffix),
          suffix.isEmpty() ? "-" : ratio(n, n.substring(0, n.length() - suffix.length())),
          last.ledger() == null ? "" : last.ledger()));
    }
    notes.forEach((k, v) -> out.println("NOTE " + k + ": " + v));
  }

  private String ratio(String name, String against) {
    List<Double> ratios = new ArrayList<>();
    for (RunResult r : results) {
      if (!r.name().equals(name)) {
        continue;
      }
      results.stream().filter(o -> o.name().equals(against) && o.round() == r.round()).findFirst()
          .ifPresent(o -> ratios.add(r.eventsPerSecond() / o.eventsPerSecond()));
    }
    return ratios.isEmpty() ? "-" : String.format(Locale.ROOT, "%.2fx", median(ratios.stream().mapToDouble(d -> d).toArray()));
  }

  static double median(double[] values) {
    double[] v = values.clone();
    java.util.Arrays.sort(v);
    return v.length == 0 ? Double.NaN : v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
  }

  private static String runId(String name) {
    return ("sbs_" + name + "_" + UUID.randomUUID().toString().substring(0, 6)).replaceAll("[^a-z0-9_]", "_");
  }

  private static String fmt(double d) {
    return Double.isNaN(d) ? "-" : String.format(Locale.ROOT, d >= 100 ? "%.0f" : "%.2f", d);
  }

  /** picocli converter for ISO-8601 durations ({@code PT15M}). */
  static final class DurationConverter implements CommandLine.ITypeConverter<Duration> {
    @Override
    public Duration convert(String value) {
      return Duration.parse(value);
    }
  }

  /** The load of the machine, for the record. */
  static final class Load {
    private Load() {}

    static String now() {
      try {
        String[] f = Files.readString(Path.of("/proc/loadavg")).trim().split(" ");
        return f[0] + " " + f[1] + " " + f[2];
      } catch (java.io.IOException e) {
        return "?";
      }
    }

    /** {@code VmHWM} (peak resident set) of process {@code pid}, in KiB; 0 when unknown. */
    static long rssHighWaterKb(long pid) {
      try {
        for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
          if (line.startsWith("VmHWM:")) {
            return Long.parseLong(line.replaceAll("[^0-9]", ""));
          }
        }
      } catch (java.io.IOException | RuntimeException e) {
        return 0;
      }
      return 0;
    }
  }

  /** Waiting on an observable condition, re-checked every 20 ms (the thing watched is another process). */
  static final class Waits {
    private Waits() {}

    interface Condition {
      boolean holds() throws Exception;
    }

    static void until(Condition condition, Duration timeout, String what) throws Exception {
      long deadline = System.nanoTime() + timeout.toNanos();
      while (!condition.holds()) {
        if (System.nanoTime() > deadline) {
          throw new TimeoutException("not reached within " + timeout + ": " + what);
        }
        TimeUnit.MILLISECONDS.sleep(20);
      }
    }
  }
}
