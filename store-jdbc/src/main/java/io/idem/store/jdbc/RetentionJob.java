package io.idem.store.jdbc;

import io.idem.StoreUnavailableException;
import io.idem.spi.RedeliveryHorizon;
import io.idem.spi.RedeliveryHorizon.Horizon;
import io.idem.spi.Settings;
import java.sql.Timestamp;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.ibatis.session.SqlSession;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The scheduled purge of processed-events markers older than the retention window
 * (docs/STORE.md, "Retention"): every {@link Builder#interval interval} one pass deletes the
 * expired markers, oldest first, in batches of at most {@link Builder#batchSize batchSize} rows,
 * each batch one short transaction of its own, with a pause after each batch proportional to
 * that batch's own duration ({@link Builder#pauseRatio}) so that the consumers' claims keep their
 * latency.
 *
 * <p><b>Several instances.</b> Every instance of the application may run a job on the same
 * table: a batch takes a transaction-scoped advisory lock ({@code pg_try_advisory_xact_lock},
 * released at its COMMIT) without waiting, and a pass that finds it held by another instance's
 * batch ends there ({@link RetentionListener#onPass yielded}), leaving the rest to that instance.
 * So at most one batch runs at a time, and no two instances scan the same rows; rows a claim is
 * racing on are skipped ({@code FOR UPDATE SKIP LOCKED}), never waited for.
 *
 * <p><b>Horizons.</b> {@link Builder#build()} reads every {@link RedeliveryHorizon} given and
 * refuses a window that is not strictly longer than a known one, and an unbounded one unless {@link
 * Builder#acceptReplaysBeyondWindow(boolean)} says so.
 *
 * <p><b>Life cycle.</b> {@link #start()} with the consumers, {@link #stop()} or {@link #close()}
 * with them. Thread-safe.
 */
public final class RetentionJob implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(RetentionJob.class);
  /** First key of the advisory lock; the second is {@code hashtext('<table>')}. */
  static final int LOCK_SPACE = 0x1DE0_0001;

  /**
   * Default {@link Builder#retention}: 15 days. Strictly longer than the redelivery horizon of a
   * Kafka topic with Kafka's default settings ({@code retention.ms} 7 days + {@code segment.ms} 7
   * days + {@code log.retention.check.interval.ms} 5 minutes: {@code KafkaRedeliveryHorizon}) and
   * than SQS's longest {@code MessageRetentionPeriod} (14 days), so that the default passes its
   * own start-up check against those brokers' defaults.
   */
  public static final Duration DEFAULT_RETENTION = Duration.ofDays(15);
  /** Default {@link Builder#interval}: 1 hour between passes. */
  public static final Duration DEFAULT_INTERVAL = Duration.ofHours(1);
  /** Default {@link Builder#initialDelay}: 1 minute after {@link #start()}. */
  public static final Duration DEFAULT_INITIAL_DELAY = Duration.ofMinutes(1);
  /**
   * Default {@link Builder#batchSize}: {@value} rows per batch transaction. With {@link
   * #DEFAULT_PAUSE_RATIO} chosen from measurements (docs/STORE.md, "Pacing"): on an idle 2-core
   * machine with a saturated consumer, 200 rows and a pause of 4 × the batch raised the consumer's
   * p99 by 0.65–0.93 ms against 1.55–3.00 ms with 1,000 rows and 1 × (and cost 0–4 % of its
   * throughput instead of 13–24 %), while still purging ~15,000 markers/s.
   */
  public static final int DEFAULT_BATCH_SIZE = 200;
  /** Default {@link Builder#pauseRatio}: {@value}, a pause four times as long as the batch took. */
  public static final double DEFAULT_PAUSE_RATIO = 4.0;
  /** Default {@link Builder#minPause}: 10 ms between two batches at least. */
  public static final Duration DEFAULT_MIN_PAUSE = Duration.ofMillis(10);

  private final MyBatisProcessedEventStore store;
  private final String namespace;
  private final Duration retention;
  private final Duration interval;
  private final Duration initialDelay;
  private final int batchSize;
  private final double pauseRatio;
  private final Duration minPause;
  private final Clock clock;
  private final RetentionListener listener;
  private final List<Horizon> horizons;
  private final CountDownLatch stopped = new CountDownLatch(1);
  private @Nullable ScheduledExecutorService scheduler;

  private RetentionJob(Builder b, List<Horizon> horizons) {
    this.store = b.store;
    this.namespace = ProcessedEventsMapper.register(store.sessionFactory().getConfiguration(),
        "io/idem/store/jdbc/RetentionMapper.xml", "io.idem.store.jdbc.Retention.",
        TableName.of(store.tableName()), "oldest", store.dialect());
    this.retention = b.retention;
    this.interval = b.interval;
    this.initialDelay = b.initialDelay;
    this.batchSize = b.batchSize;
    this.pauseRatio = b.pauseRatio;
    this.minPause = b.minPause;
    this.clock = b.clock;
    this.listener = b.listener;
    this.horizons = horizons;
    this.mariaDbLockName = "idem_retention_" + Integer.toHexString(LOCK_SPACE) + "_"
        + Integer.toHexString(store.tableName().hashCode());
  }

  /** Starts building a job for {@code store}'s table. */
  public static Builder builder(MyBatisProcessedEventStore store) {
    return new Builder(store);
  }

  /**
   * Runs a pass every interval on a daemon thread of its own, the first after the initial delay.
   *
   * @throws IllegalStateException when started twice or after {@link #close()}
   */
  public synchronized void start() {
    if (scheduler != null || stopped.getCount() == 0) {
      throw new IllegalStateException("a RetentionJob starts once, but this one was already started"
          + (stopped.getCount() == 0 ? " and closed" : ""));
    }
    ScheduledExecutorService s = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "idem-retention-" + store.tableName());
      t.setDaemon(true);
      return t;
    });
    s.scheduleWithFixedDelay(this::scheduledPass, initialDelay.toMillis(), interval.toMillis(),
        TimeUnit.MILLISECONDS);
    scheduler = s;
    LOG.info("retention of {}: window {}, a pass every {}, batches of {} rows, horizons {}",
        store.tableName(), retention, interval, batchSize, horizons);
  }

  private void scheduledPass() {
    try {
      purgeExpired();
    } catch (RuntimeException e) {
      LOG.warn("retention pass on {} failed, next in {}: {}", store.tableName(), interval, e.toString());
      safely(() -> listener.onFailure(e));
    }
  }

  /**
   * One pass on the calling thread: batch after batch until a batch comes back short, another
   * instance holds the purge lock, or the job is closed; then the oldest marker's age.
   *
   * @return markers deleted by this pass
   * @throws StoreUnavailableException when a batch failed (the batches before it stay committed)
   */
  public long purgeExpired() {
    Instant cutoff = clock.instant().minus(retention);
    long start = System.nanoTime();
    long total = 0;
    boolean yielded = false;
    while (stopped.getCount() > 0) {
      long batchStart = System.nanoTime();
      Batch batch = batch(cutoff);
      Duration took = Duration.ofNanos(System.nanoTime() - batchStart);
      if (!batch.held) {
        yielded = true;
        break;
      }
      total += batch.deleted;
      int deleted = batch.deleted;
      safely(() -> listener.onBatch(deleted, took));
      if (deleted < batchSize || !pause(took)) {
        break;
      }
    }
    if (!yielded) {
      purgeAttempts(cutoff);
    }
    Duration passTook = Duration.ofNanos(System.nanoTime() - start);
    long deleted = total;
    boolean yieldedPass = yielded;
    safely(() -> listener.onPass(deleted, passTook, yieldedPass));
    Duration age = oldestMarkerAge();
    safely(() -> listener.onOldestMarker(age));
    LOG.info("retention of {}: purged {} marker(s) older than {} in {} ms{}; oldest left {}",
        store.tableName(), total, cutoff, passTook.toMillis(),
        yielded ? " (another instance is purging)" : "", age);
    return total;
  }

  /**
   * Deletes the attempt counts (docs/FAILURES.md) last started before {@code cutoff}, batch after
   * batch: a count that old belongs to a message no longer redelivered (or whose marker the same
   * window purges), so keeping it would only make a much later replay start part-way.
   */
  private void purgeAttempts(Instant cutoff) {
    String attempts = store.attemptsNamespaceIfCounting();
    if (attempts == null) {
      return;
    }
    Map<String, Object> params = new HashMap<>();
    params.put("before", Timestamp.from(cutoff));
    params.put("beforeUtc", LocalDateTime.ofInstant(cutoff, ZoneOffset.UTC));
    params.put("maxRows", batchSize);
    int deleted;
    do {
      deleted = inSession(s -> s.delete(attempts + ".purgeAttempts", params));
    } while (deleted >= batchSize && stopped.getCount() > 0);
  }

  /** Age of the oldest marker, {@code null} when there is none; one index probe. */
  public @Nullable Duration oldestMarkerAge() {
    if (store.dialect() == Dialect.MARIADB) {
      // MariaDB keeps processed_at as a UTC wall-clock time (DATETIME): read without a zone
      LocalDateTime oldest = inSession(s -> s.selectOne(namespace + ".oldest"));
      return oldest == null ? null : Duration.between(oldest.toInstant(ZoneOffset.UTC), clock.instant());
    }
    Timestamp oldest = inSession(s -> s.selectOne(namespace + ".oldest"));
    return oldest == null ? null : Duration.between(oldest.toInstant(), clock.instant());
  }

  private record Batch(boolean held, int deleted) {}

  private Batch batch(Instant cutoff) {
    if (store.dialect() == Dialect.MARIADB) {
      return mariaDbBatch(cutoff);
    }
    Map<String, Object> params = new HashMap<>();
    params.put("lockSpace", LOCK_SPACE);
    params.put("lockName", store.tableName());
    params.put("before", Timestamp.from(cutoff));
    params.put("maxRows", batchSize);
    Map<String, Object> row = inSession(s -> s.selectOne(namespace + ".purgeBatch", params));
    if (row == null) {
      throw new IllegalStateException("the purge statement of " + store.tableName() + " returned no row");
    }
    return new Batch(Boolean.TRUE.equals(row.get("held")), (int) Rows.requiredLong(row, "deleted"));
  }

  /**
   * MariaDB's batch: its named locks are the connection's, not the transaction's, so the session
   * takes {@link #mariaDbLockName} with {@code GET_LOCK(…, 0)} (never waiting), deletes the batch
   * (SKIP LOCKED, as on PostgreSQL) and commits, then releases the lock: three round trips, plus
   * the COMMIT. A lock another instance holds makes the batch a no-op, as on PostgreSQL.
   */
  private Batch mariaDbBatch(Instant cutoff) {
    Map<String, Object> params = new HashMap<>();
    params.put("lockName", mariaDbLockName);
    params.put("beforeUtc", LocalDateTime.ofInstant(cutoff, ZoneOffset.UTC));
    params.put("maxRows", batchSize);
    try (SqlSession session = store.openRetentionSession()) {
      Integer held = session.selectOne(namespace + ".lock", params);
      if (held == null || held != 1) {
        session.rollback(true);
        return new Batch(false, 0);
      }
      try {
        int deleted = session.delete(namespace + ".purgeBatchDelete", params);
        session.commit(true);
        return new Batch(true, deleted);
      } finally {
        session.selectOne(namespace + ".unlock", params);
        session.commit(true);
      }
    } catch (RuntimeException e) {
      throw new StoreUnavailableException("retention of " + store.tableName() + " failed: "
          + TransientFailures.rootMessage(e), e);
    }
  }

  /**
   * MariaDB's name of the purge lock of this table: {@code idem_retention_} and a hash of the table
   * name (MariaDB's lock names have at most 64 characters).
   */
  private final String mariaDbLockName;

  /** {@link #mariaDbLockName}, for tests. */
  String mariaDbLockName() {
    return mariaDbLockName;
  }

  private <T> T inSession(java.util.function.Function<SqlSession, T> work) {
    try (SqlSession session = store.openRetentionSession()) {
      T result = work.apply(session);
      session.commit(true);
      return result;
    } catch (RuntimeException e) {
      throw new StoreUnavailableException("retention of " + store.tableName() + " failed: "
          + TransientFailures.rootMessage(e), e);
    }
  }

  /** Waits the pause after a batch that took {@code took}; false when the job was closed meanwhile. */
  private boolean pause(Duration took) {
    long pauseNanos = Math.max(minPause.toNanos(), (long) (took.toNanos() * pauseRatio));
    try {
      return !stopped.await(pauseNanos, TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  private static void safely(Runnable call) {
    try {
      call.run();
    } catch (RuntimeException e) {
      LOG.warn("a RetentionListener threw; ignored", e);
    }
  }

  /**
   * Checks {@code retention} against {@code horizons} by the rule {@link Builder#build()} applies
   * (each horizon read once; the window strictly longer than every bounded one; an unbounded one
   * refused unless {@code acceptReplaysBeyondWindow}), for a job built without horizons whose
   * sources are known only later (the Spring Boot starter reads its listeners' topics at start-up).
   *
   * @return the horizons read
   * @throws IllegalStateException naming the window, the horizon, the source and the fix
   */
  public static List<Horizon> checkWindow(Duration retention, List<RedeliveryHorizon> horizons,
      boolean acceptReplaysBeyondWindow) {
    return HorizonCheck.check(Objects.requireNonNull(retention, "retention"), List.copyOf(horizons),
        acceptReplaysBeyondWindow);
  }

  /** The horizons read at {@link Builder#build()}. */
  public List<Horizon> horizons() {
    return horizons;
  }

  /** The retention window. */
  public Duration retention() {
    return retention;
  }

  /** The same as {@link #close()}: a stopped job does not start again. */
  public void stop() {
    close();
  }

  /**
   * Stops the schedule; a pass under way ends after its current batch (committed). Waits up to 30
   * seconds for it. Idempotent.
   */
  @Override
  public void close() {
    ScheduledExecutorService s;
    synchronized (this) {
      stopped.countDown();
      s = scheduler;
    }
    if (s == null) {
      return;
    }
    s.shutdown();
    try {
      if (!s.awaitTermination(30, TimeUnit.SECONDS)) {
        LOG.warn("retention of {}: a batch is still running after 30 s", store.tableName());
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Builder of {@link RetentionJob}; {@link #build()} validates and reads the horizons. Not thread-safe. */
  public static final class Builder {
    private final MyBatisProcessedEventStore store;
    private Duration retention = DEFAULT_RETENTION;
    private Duration interval = DEFAULT_INTERVAL;
    private Duration initialDelay = DEFAULT_INITIAL_DELAY;
    private int batchSize = DEFAULT_BATCH_SIZE;
    private double pauseRatio = DEFAULT_PAUSE_RATIO;
    private Duration minPause = DEFAULT_MIN_PAUSE;
    private Clock clock = Clock.systemUTC();
    private RetentionListener listener = new RetentionListener() {};
    private final List<RedeliveryHorizon> horizons = new ArrayList<>();
    private boolean acceptReplaysBeyondWindow;

    private Builder(MyBatisProcessedEventStore store) {
      this.store = Objects.requireNonNull(store, "store");
    }

    /** How long markers are kept after {@code processed_at}; default {@link #DEFAULT_RETENTION} (15 days). Positive; strictly longer than every horizon given. */
    public Builder retention(Duration value) {
      this.retention = Objects.requireNonNull(value, "retention");
      return this;
    }

    /** Time between the end of a pass and the start of the next; default {@link #DEFAULT_INTERVAL} (1 hour). Positive. */
    public Builder interval(Duration value) {
      this.interval = Objects.requireNonNull(value, "interval");
      return this;
    }

    /** Time from {@link #start()} to the first pass; default {@link #DEFAULT_INITIAL_DELAY} (1 minute). Not negative. */
    public Builder initialDelay(Duration value) {
      this.initialDelay = Objects.requireNonNull(value, "initialDelay");
      return this;
    }

    /** Rows per batch transaction; default {@value RetentionJob#DEFAULT_BATCH_SIZE}. 1 to 100,000. */
    public Builder batchSize(int value) {
      this.batchSize = value;
      return this;
    }

    /**
     * The pause after a full batch, as a multiple of that batch's own duration; default {@value
     * RetentionJob#DEFAULT_PAUSE_RATIO} (the purge then uses at most about a fifth of one
     * connection's time). 0 to 100; 0 leaves only {@link #minPause}.
     */
    public Builder pauseRatio(double value) {
      this.pauseRatio = value;
      return this;
    }

    /** The shortest pause between two batches; default {@link #DEFAULT_MIN_PAUSE} (10 ms). Not negative. */
    public Builder minPause(Duration value) {
      this.minPause = Objects.requireNonNull(value, "minPause");
      return this;
    }

    /** Where "now" comes from; default {@link Clock#systemUTC()}. */
    public Builder clock(Clock value) {
      this.clock = Objects.requireNonNull(value, "clock");
      return this;
    }

    /** Default none. See {@link MicrometerRetentionListener}. */
    public Builder listener(RetentionListener value) {
      this.listener = Objects.requireNonNull(value, "listener");
      return this;
    }

    /**
     * A source whose markers live in this table; the window is checked against its horizon at
     * {@link #build()}. Add one per source (topic, queue). With none, nothing is checked: the
     * window is then the user's own promise.
     */
    public Builder redeliveryHorizon(RedeliveryHorizon value) {
      this.horizons.add(Objects.requireNonNull(value, "redeliveryHorizon"));
      return this;
    }

    /**
     * Default {@code false}: an unbounded horizon (infinite Kafka retention, a compacted topic)
     * refuses the job. {@code true} accepts that a message delivered again after its marker was
     * purged — a replay older than the window — is applied again.
     */
    public Builder acceptReplaysBeyondWindow(boolean value) {
      this.acceptReplaysBeyondWindow = value;
      return this;
    }

    /**
     * Validates, then reads every horizon (this may ask the brokers).
     *
     * @throws IllegalArgumentException naming the setting when a value is out of range
     * @throws IllegalStateException when the window is not longer than a horizon, a horizon is
     *     unbounded and not accepted, or a horizon could not be read
     */
    public RetentionJob build() {
      Settings.positive("retention", retention);
      Settings.positive("interval", interval);
      Settings.notNegative("initialDelay", initialDelay);
      Settings.notNegative("minPause", minPause);
      if (batchSize < 1 || batchSize > 100_000) {
        throw new IllegalArgumentException("batchSize must be in [1, 100000], but was " + batchSize);
      }
      if (!(pauseRatio >= 0 && pauseRatio <= 100)) {
        throw new IllegalArgumentException("pauseRatio must be in [0, 100], but was " + pauseRatio);
      }
      return new RetentionJob(this, HorizonCheck.check(retention, horizons, acceptReplaysBeyondWindow));
    }
  }
}
