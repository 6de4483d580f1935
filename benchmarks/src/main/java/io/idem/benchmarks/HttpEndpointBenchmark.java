package io.idem.benchmarks;

import io.idem.fixtures.PostgresFixture;
import io.idem.http.ClientResolver;
import io.idem.http.IdempotencyKeyEndpoint;
import io.idem.http.JdbcStoredResponses;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Level;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.apache.catalina.Context;
import org.apache.catalina.startup.Tomcat;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Requests/s and latency of an idempotent POST endpoint (idem-http's {@link IdempotencyKeyEndpoint}:
 * claim, handler INSERT, stored response, COMMIT) against the same endpoint without Idem (a
 * servlet doing one plain JDBC transaction per request: the same INSERT, COMMIT, the same JSON
 * answer), on one embedded Tomcat, one PostgreSQL, one load generator (java.net.http, a fixed
 * number of concurrent clients, each request with a new {@code Idempotency-Key}), in interleaved
 * rounds of one invocation. {@code idem} costs 3 round trips to PostgreSQL per request, {@code
 * plain} 2. Three more variants: {@code idem-table}, the same endpoint storing its responses as
 * before V9 (a row of {@code idem_http_responses} with its foreign key to the marker, instead of
 * an UPDATE of the marker: 3 round trips too); {@code idem-reset}, the endpoint on a store whose
 * claim keeps its lock timeout for the transaction (the stored responses reset it before the
 * handler: 4 round trips); and {@code idem-replay}, keys already answered: the replay path (claim
 * finds the key, stored response read). Besides requests/s and latency, the CPU time per request
 * of this JVM (clients and Tomcat) and of the variant's PostgreSQL backends (read from {@code
 * /proc}, when PostgreSQL runs on this machine). BENCHMARKS.md, "HTTP".
 */
@Command(name = "HttpEndpointBenchmark", mixinStandardHelpOptions = true)
public final class HttpEndpointBenchmark implements Callable<Integer> {
  private static final Logger TOMCAT = Logger.getLogger("org.apache");

  @Option(names = "--seconds", defaultValue = "15", description = "Measured seconds per variant and round.")
  int seconds;

  @Option(names = "--warmup-seconds", defaultValue = "10", description = "Unrecorded seconds of each variant first.")
  int warmupSeconds;

  @Option(names = "--rounds", defaultValue = "3", description = "Interleaved rounds.")
  int rounds;

  @Option(names = "--concurrency", defaultValue = "8", description = "Concurrent clients.")
  int concurrency;

  @Option(names = "--pool", defaultValue = "8", description = "Connections of each variant's pool.")
  int pool;

  public static void main(String[] args) {
    System.exit(new CommandLine(new HttpEndpointBenchmark()).execute(args));
  }

  /**
   * One variant's figures of one round; CPU nanoseconds of this JVM and of the variant's
   * PostgreSQL backends ({@code -1} when unknown) over the measured seconds.
   */
  record Result(String variant, long requests, long failures, double seconds, long[] latenciesNanos,
      long jvmCpuNanos, long postgresCpuNanos) {
    String cpuPerRequest() {
      if (requests == 0) {
        return "n/a";
      }
      return String.format(Locale.ROOT, "CPU/request JVM %4.0f us, PostgreSQL %s", jvmCpuNanos / 1e3 / requests,
          postgresCpuNanos < 0 ? "n/a" : String.format(Locale.ROOT, "%4.0f us", postgresCpuNanos / 1e3 / requests));
    }

    double perSecond() {
      return requests / seconds;
    }

    double percentileMillis(double p) {
      long[] sorted = latenciesNanos.clone();
      Arrays.sort(sorted);
      if (sorted.length == 0) {
        return 0;
      }
      int at = (int) Math.min(sorted.length - 1, Math.ceil(p / 100 * sorted.length) - 1);
      return sorted[Math.max(0, at)] / 1e6;
    }
  }

  @Override
  public Integer call() throws Exception {
    TOMCAT.setLevel(Level.SEVERE);
    System.setProperty("idem.fixtures.announce", "false");
    System.setProperty("idem.testcontainers", "false"); // the machine's PostgreSQL (or IDEM_POSTGRES_URL)
    PostgresFixture postgres = PostgresFixture.shared();
    String schema = "bench_http_" + UUID.randomUUID().toString().substring(0, 8);
    postgres.createSchema(schema);
    var idemPool = postgres.dataSource(schema, pool);
    var plainPool = postgres.dataSource(schema, pool);
    execute(idemPool, "CREATE TABLE orders (id bigserial PRIMARY KEY, client text, amount integer)");
    SqlSessionFactory sessions = Postgres.sessionsOn(idemPool);
    MyBatisProcessedEventStore store = JdbcStoredResponses.processedEventStore(sessions)
        .createTableIfMissing(true).build();
    JdbcStoredResponses responses = JdbcStoredResponses.builder(sessions).createTableIfMissing(true).build();
    IdempotencyKeyEndpoint<SqlSession> endpoint = IdempotencyKeyEndpoint.builder(store, responses)
        .consumerGroup("bench").clientResolver(ClientResolver.header("X-Client")).build();

    Path base = Files.createTempDirectory("idem-bench-tomcat");
    Tomcat tomcat = new Tomcat();
    tomcat.setBaseDir(base.toString());
    tomcat.setPort(0);
    tomcat.getConnector().setProperty("address", "127.0.0.1");
    Context context = tomcat.addContext("", base.toString());
    Tomcat.addServlet(context, "idem", endpoint.servlet((request, response, session) ->
        answer(request, response, insert(session.getConnection(), request))));
    context.addServletMappingDecoded("/idem/orders", "idem");
    // the same endpoint on a store whose claim keeps its 1 ms lock timeout for the transaction, so
    // that the stored responses reset it before the handler: one round trip more (4)
    MyBatisProcessedEventStore keeping = MyBatisProcessedEventStore.builder(Postgres.sessionsOn(idemPool))
        .claimLockTimeout(JdbcStoredResponses.IN_FLIGHT_CLAIM_LOCK_TIMEOUT).build();
    IdempotencyKeyEndpoint<SqlSession> resetting = IdempotencyKeyEndpoint.builder(keeping, responses)
        .consumerGroup("bench").clientResolver(ClientResolver.header("X-Client")).build();
    Tomcat.addServlet(context, "idem-reset", resetting.servlet((request, response, session) ->
        answer(request, response, insert(session.getConnection(), request))));
    context.addServletMappingDecoded("/idem-reset/orders", "idem-reset");
    // the same endpoint storing its responses as before V9: a row of idem_http_responses per key
    IdempotencyKeyEndpoint<SqlSession> table = IdempotencyKeyEndpoint.builder(store, new TableResponses(idemPool))
        .consumerGroup("bench-table").clientResolver(ClientResolver.header("X-Client")).build();
    Tomcat.addServlet(context, "idem-table", table.servlet((request, response, session) ->
        answer(request, response, insert(session.getConnection(), request))));
    context.addServletMappingDecoded("/idem-table/orders", "idem-table");
    Tomcat.addServlet(context, "plain", new PlainServlet(plainPool));
    context.addServletMappingDecoded("/plain/orders", "plain");
    tomcat.start();
    URI server = URI.create("http://127.0.0.1:" + tomcat.getConnector().getLocalPort());
    System.out.println("HttpEndpointBenchmark: PostgreSQL " + postgres.origin() + " ("
        + Postgres.settings(postgres.jdbcUrl(), postgres.user(), postgres.password()) + "); " + concurrency
        + " concurrent clients, pools of " + pool + ", " + rounds + " rounds of " + seconds + " s per variant;"
        + " Java " + System.getProperty("java.version") + ", " + Runtime.getRuntime().availableProcessors() + " CPUs");
    backends.put("plain", backendPids(plainPool));
    List<Integer> idemBackends = backendPids(idemPool);
    for (String variant : List.of("idem", "idem-table", "idem-reset", "idem-replay")) {
      backends.put(variant, idemBackends);
    }
    List<String> replayKeys = new ArrayList<>();
    try {
      for (String variant : List.of("plain", "idem", "idem-table")) {
        load(server, variant, warmupSeconds, replayKeys);
      }
      List<Result> results = new ArrayList<>();
      for (int round = 1; round <= rounds; round++) {
        List<String> variants = List.of("plain", "idem", "idem-table", "idem-reset", "idem-replay");
        for (String variant : variants) {
          Result result = load(server, variant, seconds, replayKeys);
          results.add(result);
          System.out.printf(Locale.ROOT, "round %d %-12s %8.0f req/s  p50 %6.2f ms  p99 %6.2f ms  (%d requests, %d failed)  %s%n",
              round, variant, result.perSecond(), result.percentileMillis(50), result.percentileMillis(99),
              result.requests(), result.failures(), result.cpuPerRequest());
        }
        Result plain = results.get(results.size() - variants.size());
        Result idem = results.get(results.size() - variants.size() + 1);
        Result idemTable = results.get(results.size() - variants.size() + 2);
        System.out.printf(Locale.ROOT, "round %d idem/plain   %.2fx req/s, p99 %.2f ms vs %.2f ms;"
            + " idem-table/plain %.2fx, p99 %.2f ms (load average %s)%n",
            round, idem.perSecond() / plain.perSecond(), idem.percentileMillis(99), plain.percentileMillis(99),
            idemTable.perSecond() / plain.perSecond(), idemTable.percentileMillis(99), loadAverage());
      }
      long orders = count(idemPool, "SELECT count(*) FROM orders");
      long markers = count(idemPool, "SELECT count(*) FROM idem_processed_events");
      System.out.println("orders " + orders + ", markers " + markers + ", stored responses "
          + count(idemPool, "SELECT count(*) FROM idem_processed_events WHERE response_status IS NOT NULL")
          + " (+ " + count(idemPool, "SELECT count(*) FROM idem_http_responses") + " in idem_http_responses)");
    } finally {
      tomcat.stop();
      tomcat.destroy();
      execute(idemPool, "DROP SCHEMA " + schema + " CASCADE");
      idemPool.close();
      plainPool.close();
    }
    return 0;
  }

  /** {@code concurrency} clients POSTing for {@code seconds}; new keys, or the replay keys. */
  private Result load(URI server, String variant, int seconds, List<String> replayKeys) throws Exception {
    HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(Duration.ofSeconds(5)).build();
    URI uri = server.resolve(variant.equals("idem-replay") ? "/idem/orders" : "/" + variant + "/orders");
    List<Integer> pids = backends.getOrDefault(variant, List.of());
    long jvmCpu0 = jvmCpuNanos();
    long pgCpu0 = cpuNanos(pids);
    long end = System.nanoTime() + Duration.ofSeconds(seconds).toNanos();
    AtomicLong failures = new AtomicLong();
    List<String> keysSeen = java.util.Collections.synchronizedList(new ArrayList<>());
    ExecutorService clients = Executors.newFixedThreadPool(concurrency);
    List<Future<long[]>> runs = new ArrayList<>();
    long started = System.nanoTime();
    for (int c = 0; c < concurrency; c++) {
      int clientIndex = c;
      runs.add(clients.submit(() -> {
        long[] latencies = new long[1 << 16];
        int n = 0;
        int i = 0;
        while (System.nanoTime() < end) {
          String key = variant.equals("idem-replay") && !replayKeys.isEmpty()
              ? replayKeys.get((clientIndex + i++ * concurrency) % replayKeys.size())
              : UUID.randomUUID().toString();
          HttpRequest request = HttpRequest.newBuilder(uri)
              .timeout(Duration.ofSeconds(30))
              .header("Content-Type", "application/json")
              .header("Idempotency-Key", key)
              .header("X-Client", "bench")
              .POST(HttpRequest.BodyPublishers.ofString("{\"amount\":1999,\"currency\":\"EUR\"}"))
              .build();
          long t0 = System.nanoTime();
          try {
            HttpResponse<byte[]> response = client.send(request, HttpResponse.BodyHandlers.ofByteArray());
            if (response.statusCode() != 201) {
              if (failures.incrementAndGet() <= 3) {
                System.out.println("  " + variant + ": answered " + response.statusCode() + " "
                    + new String(response.body(), StandardCharsets.UTF_8));
              }
              continue;
            }
          } catch (IOException e) {
            if (failures.incrementAndGet() <= 3) {
              System.out.println("  " + variant + ": " + e);
            }
            continue;
          }
          if (n == latencies.length) {
            latencies = Arrays.copyOf(latencies, n * 2);
          }
          latencies[n++] = System.nanoTime() - t0;
          if (variant.equals("idem") && keysSeen.size() < 10_000) {
            keysSeen.add(key);
          }
        }
        return Arrays.copyOf(latencies, n);
      }));
    }
    List<long[]> all = new ArrayList<>();
    for (Future<long[]> run : runs) {
      all.add(run.get());
    }
    double elapsed = (System.nanoTime() - started) / 1e9;
    long jvmCpu = jvmCpuNanos() - jvmCpu0;
    long pgCpu1 = cpuNanos(pids);
    long pgCpu = pgCpu0 < 0 || pgCpu1 < 0 ? -1 : pgCpu1 - pgCpu0;
    clients.shutdown();
    if (variant.equals("idem") && replayKeys.isEmpty()) {
      replayKeys.addAll(keysSeen);
    }
    long[] latencies = all.stream().flatMapToLong(Arrays::stream).toArray();
    return new Result(variant, latencies.length, failures.get(), elapsed, latencies, jvmCpu, pgCpu);
  }

  /** One INSERT of the order; its id. */
  static long insert(Connection connection, HttpServletRequest request) throws SQLException, IOException {
    byte[] body = request.getInputStream().readAllBytes();
    int amount = new String(body, StandardCharsets.UTF_8).contains("1999") ? 1999 : 0;
    try (PreparedStatement ps = connection.prepareStatement(
        "INSERT INTO orders (client, amount) VALUES (?, ?) RETURNING id")) {
      ps.setString(1, request.getHeader("X-Client"));
      ps.setInt(2, amount);
      try (var rows = ps.executeQuery()) {
        rows.next();
        return rows.getLong(1);
      }
    }
  }

  static void answer(HttpServletRequest request, HttpServletResponse response, long id) throws IOException {
    byte[] json = ("{\"id\":" + id + ",\"amount\":1999,\"status\":\"created\"}").getBytes(StandardCharsets.UTF_8);
    response.setStatus(201);
    response.setContentType("application/json");
    response.setHeader("Location", "/orders/" + id);
    response.setContentLength(json.length);
    response.getOutputStream().write(json);
  }

  /** The same endpoint without Idem: one plain JDBC transaction per request, no dedup. */
  static final class PlainServlet extends HttpServlet {
    private static final long serialVersionUID = 1L;
    private final transient DataSource dataSource;

    PlainServlet(DataSource dataSource) {
      this.dataSource = dataSource;
    }

    @Override
    protected void doPost(HttpServletRequest request, HttpServletResponse response) throws IOException {
      long id;
      try (Connection c = dataSource.getConnection()) {
        c.setAutoCommit(false);
        try {
          id = insert(c, request);
          c.commit();
        } catch (SQLException | RuntimeException e) {
          c.rollback();
          throw e;
        }
      } catch (SQLException e) {
        response.sendError(500, e.getMessage());
        return;
      }
      answer(request, response, id);
    }
  }

  /** The PostgreSQL backend pids of each variant's pool. */
  private final java.util.Map<String, List<Integer>> backends = new java.util.HashMap<>();

  /**
   * The backend pids of every connection of {@code pool}: all {@link #pool} connections borrowed
   * at once, so each is a distinct one (HikariCP keeps them for the run: maxLifetime 30 min).
   */
  private List<Integer> backendPids(DataSource pool) throws SQLException {
    List<Connection> held = new ArrayList<>();
    List<Integer> pids = new ArrayList<>();
    try {
      for (int i = 0; i < this.pool; i++) {
        Connection c = pool.getConnection();
        held.add(c);
        try (var s = c.createStatement(); var rows = s.executeQuery("SELECT pg_backend_pid()")) {
          rows.next();
          pids.add(rows.getInt(1));
        }
      }
    } finally {
      for (Connection c : held) {
        c.close();
      }
    }
    return pids;
  }

  /** This JVM's CPU time (all threads: the clients, Tomcat, the pools). */
  private static long jvmCpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory
        .getOperatingSystemMXBean()).getProcessCpuTime();
  }

  /** The CPU time (user + system) of these processes from /proc, or -1 when one cannot be read. */
  private static long cpuNanos(List<Integer> pids) {
    if (pids.isEmpty()) {
      return -1;
    }
    long ticks = 0;
    for (int pid : pids) {
      try {
        String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
        String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        ticks += Long.parseLong(fields[11]) + Long.parseLong(fields[12]); // utime, stime
      } catch (IOException | RuntimeException e) {
        return -1;
      }
    }
    return ticks * 10_000_000L; // USER_HZ 100 on Linux
  }

  /**
   * The stored responses as before V9: a row of {@code idem_http_responses} per key (with its
   * foreign key to the marker), inserted in the COMMIT's round trip, read on a connection of its
   * own — for the {@code idem-table} variant only.
   */
  static final class TableResponses implements io.idem.http.spi.StoredResponses<SqlSession> {
    private static final com.fasterxml.jackson.databind.ObjectMapper JSON = new com.fasterxml.jackson.databind.ObjectMapper();
    private final DataSource dataSource;

    TableResponses(DataSource dataSource) {
      this.dataSource = dataSource;
    }

    @Override
    public void save(SqlSession transaction, io.idem.IdempotencyKey key, io.idem.http.spi.StoredResponse response) {
      try {
        List<List<String>> pairs = new ArrayList<>();
        for (var h : response.headers()) {
          pairs.add(List.of(h.name(), h.value()));
        }
        MyBatisProcessedEventStore.executeBeforeCommit(transaction,
            "INSERT INTO idem_http_responses (consumer_group, idempotency_key, status, headers, body)"
                + " VALUES (?, ?, ?, ?, ?)", key.consumerGroup(), key.value(), response.status(),
            JSON.writeValueAsString(pairs), response.body());
      } catch (SQLException | IOException e) {
        throw new IllegalStateException(e);
      }
    }

    @Override
    public io.idem.http.spi.@org.jspecify.annotations.Nullable StoredResponse find(io.idem.IdempotencyKey key) {
      try (Connection c = dataSource.getConnection(); PreparedStatement s = c.prepareStatement(
          "SELECT status, headers, body FROM idem_http_responses WHERE consumer_group = ? AND idempotency_key = ?")) {
        s.setString(1, key.consumerGroup());
        s.setString(2, key.value());
        try (var rows = s.executeQuery()) {
          if (!rows.next()) {
            return null;
          }
          List<io.idem.http.spi.StoredResponse.Header> headers = new ArrayList<>();
          for (String[] pair : JSON.readValue(rows.getString(2), String[][].class)) {
            headers.add(new io.idem.http.spi.StoredResponse.Header(pair[0], pair[1]));
          }
          return new io.idem.http.spi.StoredResponse(rows.getInt(1), headers, rows.getBytes(3));
        }
      } catch (SQLException | IOException e) {
        throw new IllegalStateException(e);
      }
    }
  }

  /** The 1-minute load average of the machine (clients, Tomcat and PostgreSQL share it). */
  private static String loadAverage() {
    double load = java.lang.management.ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
    return load < 0 ? "n/a" : String.format(Locale.ROOT, "%.2f", load);
  }

  private static void execute(DataSource ds, String sql) throws SQLException {
    try (Connection c = ds.getConnection(); var s = c.createStatement()) {
      s.execute(sql);
    }
  }

  private static long count(DataSource ds, String sql) throws SQLException {
    try (Connection c = ds.getConnection(); var s = c.createStatement(); var rows = s.executeQuery(sql)) {
      rows.next();
      return rows.getLong(1);
    }
  }
}
