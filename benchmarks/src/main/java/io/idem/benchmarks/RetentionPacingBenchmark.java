package io.idem.benchmarks;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import io.idem.fixtures.PostgresFixture;
import io.idem.spi.Acknowledgement;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.store.jdbc.RetentionJob;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;

/**
 * What a purge of expired markers does to the consumers' claims: claim latency (one new key per
 * transaction through {@link IdempotentConsumer#process}, PostgreSQL only) on a few threads,
 * first with no purge, then while a {@link RetentionJob} deletes {@code rows} expired markers in
 * each configuration; p50 / p99 of the claims made during each phase.
 *
 * <p>Run: {@code mvn -B -q -ntp -DskipTests -pl benchmarks -am package && java -cp
 * benchmarks/target/benchmarks.jar io.idem.benchmarks.RetentionPacingBenchmark [rows] [threads]}
 * (PostgreSQL resolved like the tests: IDEM_POSTGRES_URL, else 127.0.0.1:5432). Defaults:
 * 1,000,000 rows, 2 threads, every configuration; a third argument picks configurations by index
 * ({@code "02"}), and 0 threads measures the purge alone. Results: docs/STORE.md, "Retention".
 */
public final class RetentionPacingBenchmark {
  private static final Acknowledgement NO_BROKER = new Acknowledgement() {
    @Override public void ack() {}
    @Override public void retry(Duration delay) {}
    @Override public void deadLetter(io.idem.DeadLetterReason reason) {}
  };

  private final HikariDataSource dataSource;
  private final MyBatisProcessedEventStore store;
  private final IdempotentConsumer<SqlSession> pipeline;
  private final AtomicLong sequence = new AtomicLong();
  private final PrintStream out;

  private RetentionPacingBenchmark(PrintStream out) {
    this.out = out;
    this.dataSource = PostgresFixture.shared().newSchema("idem_retention_bench");
    var sessions = new SqlSessionFactoryBuilder().build(
        new Configuration(new Environment("bench", new JdbcTransactionFactory(), dataSource)));
    this.store = MyBatisProcessedEventStore.builder(sessions).createTableIfMissing(true).build();
    this.pipeline = IdempotentConsumer.builder(store).consumerGroup("bench")
        .handler((message, session) -> {}).build();
  }

  public static void main(String[] args) throws Exception {
    int rows = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
    int threads = args.length > 1 ? Integer.parseInt(args[1]) : 2;
    String only = args.length > 2 ? args[2] : "0123";
    RetentionPacingBenchmark bench = new RetentionPacingBenchmark(System.out);
    try {
      bench.run(rows, threads, only);
    } finally {
      try (Connection c = bench.dataSource.getConnection(); Statement s = c.createStatement()) {
        s.execute("DROP SCHEMA " + bench.dataSource.getSchema() + " CASCADE"); // the markers go with it
      }
      bench.dataSource.close();
    }
  }

  /** {@code only}: which of the configurations to run, by index ("0123" = all). */
  private void run(int rows, int threads, String only) throws Exception {
    out.printf("rows=%,d threads=%d%n", rows, threads);
    seed(rows);
    Phase baseline = claimsWhile(threads, () -> {
      pause(Duration.ofSeconds(20));
      return 0L;
    });
    report("no purge (20 s)", baseline, 0, null);
    List<Object[]> configs = List.of(
        new Object[] {"10,000-row batches back to back", 10_000, 0.0, Duration.ZERO},
        new Object[] {"1,000-row batches back to back", 1_000, 0.0, Duration.ZERO},
        new Object[] {"paced: 1,000 rows, pause = 1 x batch (defaults)", RetentionJob.DEFAULT_BATCH_SIZE,
            RetentionJob.DEFAULT_PAUSE_RATIO, RetentionJob.DEFAULT_MIN_PAUSE},
        new Object[] {"paced: 500 rows, pause = 2 x batch", 500, 2.0, RetentionJob.DEFAULT_MIN_PAUSE});
    boolean purged = false; // the markers of the first seed are still there
    for (int i = 0; i < configs.size(); i++) {
      if (only.indexOf(Character.forDigit(i, 10)) < 0) {
        continue;
      }
      Object[] config = configs.get(i);
      if (purged) {
        seed(rows);
      }
      purged = true;
      // a 7-day window: the markers seeded below are 8 days old (the default window is 15 days)
      RetentionJob job = RetentionJob.builder(store).retention(Duration.ofDays(7)).batchSize((Integer) config[1])
          .pauseRatio((Double) config[2]).minPause((Duration) config[3]).build();
      long[] took = new long[1];
      Phase phase = claimsWhile(threads, () -> {
        long start = System.nanoTime();
        long deleted = job.purgeExpired();
        took[0] = System.nanoTime() - start;
        return deleted;
      });
      report((String) config[0], phase, took[0], baseline);
    }
    // the machine may have changed meanwhile: a second baseline says by how much
    report("no purge again (20 s)", claimsWhile(threads, () -> {
      pause(Duration.ofSeconds(20));
      return 0L;
    }), 0, baseline);
  }

  /** Exactly {@code rows} expired markers (8 days old) and nothing else expired; analyzed. */
  private void seed(int rows) throws Exception {
    long start = System.nanoTime();
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("DELETE FROM idem_processed_events WHERE processed_at < now() - interval '7 days'");
      s.execute("INSERT INTO idem_processed_events"
          + " (consumer_group, idempotency_key, key_source, payload_sha256, processed_at)"
          + " SELECT 'old', 'expired-' || i, 'HEADER', decode(repeat('00', 32), 'hex'),"
          + " now() - interval '8 days' - i * interval '1 millisecond' FROM generate_series(1, " + rows + ") i");
      s.execute("VACUUM ANALYZE idem_processed_events");
    }
    out.printf("seeded %,d expired markers in %.1f s%n", rows, (System.nanoTime() - start) / 1e9);
  }

  record Phase(long[] latencies, long deleted) {}

  /** Claims on {@code threads} threads while {@code work} runs on this one. */
  private Phase claimsWhile(int threads, Supplier<Long> work) throws Exception {
    AtomicBoolean running = new AtomicBoolean(true);
    List<long[]> perThread = new ArrayList<>();
    List<int[]> counts = new ArrayList<>();
    List<Thread> workers = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      long[] lat = new long[2_000_000];
      int[] n = new int[1];
      perThread.add(lat);
      counts.add(n);
      Thread worker = new Thread(() -> {
        while (running.get() && n[0] < lat.length) {
          InboundMessage message = InboundMessage.builder("orders",
                  "{\"order\":1}".getBytes(StandardCharsets.UTF_8))
              .header("idempotency-key", "k-" + sequence.incrementAndGet()).build();
          long start = System.nanoTime();
          ProcessingOutcome outcome = pipeline.process(message, NO_BROKER);
          long took = System.nanoTime() - start;
          if (outcome == ProcessingOutcome.PROCESSED) {
            lat[n[0]++] = took;
          }
        }
      }, "claims-" + t);
      workers.add(worker);
      worker.start();
    }
    pause(Duration.ofSeconds(2)); // the claims run before the phase's work starts
    int[] skip = counts.stream().mapToInt(n -> n[0]).toArray();
    long deleted = work.get();
    running.set(false);
    for (Thread worker : workers) {
      worker.join();
    }
    int total = 0;
    for (int t = 0; t < threads; t++) {
      total += counts.get(t)[0] - skip[t];
    }
    long[] all = new long[total];
    int at = 0;
    for (int t = 0; t < threads; t++) {
      int from = skip[t];
      int len = counts.get(t)[0] - from;
      System.arraycopy(perThread.get(t), from, all, at, len);
      at += len;
    }
    Arrays.sort(all);
    return new Phase(all, deleted);
  }

  private void report(String name, Phase phase, long purgeNanos, Phase baseline) {
    long[] l = phase.latencies;
    double p50 = percentile(l, 0.50);
    double p99 = percentile(l, 0.99);
    String rise = baseline == null ? "" : String.format(", p99 %+.0f %%", 100 * (p99 / percentile(baseline.latencies, 0.99) - 1));
    out.printf("%-50s claims=%,d p50=%.2f ms p99=%.2f ms%s; purged %,d in %.1f s%n",
        name, l.length, p50, p99, rise, phase.deleted, purgeNanos / 1e9);
  }

  private static double percentile(long[] sorted, double q) {
    if (sorted.length == 0) {
      return Double.NaN;
    }
    return sorted[(int) Math.min(sorted.length - 1, Math.floor(q * sorted.length))] / 1e6;
  }

  private static void pause(Duration d) {
    try {
      Thread.sleep(d.toMillis()); // a benchmark phase's length, not a synchronization
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
