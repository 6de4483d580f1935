package io.idem.store.jdbc;

import io.idem.NonRetryableException;
import io.idem.RetryPolicy;
import io.idem.spi.OutboxMessage;
import io.idem.spi.OutboxPublisher;
import io.idem.spi.Settings;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.ibatis.session.ExecutorType;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes the rows of an {@link Outbox} through an {@link OutboxPublisher}, at least once:
 * one thread that claims due rows in bounded batches ({@code SELECT … FOR UPDATE SKIP LOCKED}),
 * publishes each (waiting for the destination's confirmation), marks it sent and commits.
 *
 * <ul>
 *   <li>The batch's row locks are the lease: a second relay (another thread, process or host)
 *       skips them and never publishes a row this one holds; a relay that dies releases them
 *       with its connection, and the rows are published again — with the same idempotency key,
 *       so the next Idem consumer applies them once. A crash between the confirmation and the
 *       commit is the one way a row is published twice.
 *   <li>A failed publish is retried after the {@link RetryPolicy}'s exponential, capped backoff;
 *       after its {@code maxAttempts} attempts, or at once when the publisher throws {@link
 *       NonRetryableException}, the row is parked with the reason ({@code last_error}).
 *   <li>Rows with the same ordering key are published one at a time in enqueue order, across all
 *       relays: a row waits while an earlier one with its key is unsent (in flight, backing off,
 *       or parked).
 * </ul>
 *
 * <p>Each batch is one transaction; keep it short with {@code batchSize} and the publisher's own
 * timeouts (a publish that hangs holds the batch's locks). Thread-safe; {@link #start()} once,
 * {@link #close()} finishes the batch in flight and stops. The publisher is not closed by the
 * relay.
 */
public final class OutboxRelay implements AutoCloseable {
  /** Default rows per batch (one transaction): {@value}. */
  public static final int DEFAULT_BATCH_SIZE = 100;
  /** Default wait between polls when the last batch was not full: 200 ms. */
  public static final Duration DEFAULT_POLL_INTERVAL = Duration.ofMillis(200);
  /**
   * Default {@link Builder#retryPolicy retry policy}: 10 attempts before a row is parked, 1 s
   * after the first failure doubling up to 5 min, ±20 % jitter.
   */
  public static final RetryPolicy DEFAULT_RETRY_POLICY = RetryPolicy.builder().maxAttempts(10)
      .initialBackoff(Duration.ofSeconds(1)).maxBackoff(Duration.ofMinutes(5)).build();
  /** Default interval at which the relay thread refreshes {@link #lastStats()}: 10 s. */
  public static final Duration DEFAULT_STATS_INTERVAL = Duration.ofSeconds(10);
  /** Default time {@link #close()} waits for the batch in flight: 30 s. */
  public static final Duration DEFAULT_CLOSE_TIMEOUT = Duration.ofSeconds(30);
  /** Longest stored error text, in characters: {@value}. */
  static final int MAX_ERROR_LENGTH = 2000;

  private static final Logger LOG = LoggerFactory.getLogger(OutboxRelay.class);

  private final SqlSessionFactory sessions;
  private final OutboxPublisher publisher;
  private final Outbox outbox;
  private final int batchSize;
  private final Duration pollInterval;
  private final RetryPolicy retryPolicy;
  private final Duration statsInterval;
  private final Duration closeTimeout;
  private final String name;
  private final CountDownLatch stopping = new CountDownLatch(1);
  private final AtomicLong published = new AtomicLong();
  private final AtomicLong failures = new AtomicLong();
  private final AtomicReference<OutboxStats> lastStats;
  private final Object lifecycle = new Object();
  private @Nullable Thread thread;
  private long nextStatsNanos;
  private int consecutiveDatabaseFailures;

  private OutboxRelay(Builder b) {
    this.sessions = b.sessions;
    this.publisher = b.publisher;
    this.outbox = Outbox.of(b.tableName);
    this.batchSize = b.batchSize;
    this.pollInterval = b.pollInterval;
    this.retryPolicy = b.retryPolicy;
    this.statsInterval = b.statsInterval;
    this.closeTimeout = b.closeTimeout;
    this.name = b.name;
    this.lastStats = new AtomicReference<>(new OutboxStats(0, Duration.ZERO, 0, 0, 0, Instant.EPOCH));
  }

  /**
   * A builder for a relay over {@code sessions} (a factory whose {@code Environment} uses MyBatis'
   * {@code JdbcTransactionFactory}, as for the store) that publishes with {@code publisher}.
   */
  public static Builder builder(SqlSessionFactory sessions, OutboxPublisher publisher) {
    return new Builder(sessions, publisher);
  }

  /**
   * Starts the relay thread (a daemon named after {@code name}).
   *
   * @throws IllegalStateException when already started or closed
   */
  public void start() {
    synchronized (lifecycle) {
      if (thread != null || stopping.getCount() == 0) {
        throw new IllegalStateException("relay " + name + " was already started or closed");
      }
      Thread t = new Thread(this::run, name);
      t.setDaemon(true);
      thread = t;
      t.start();
    }
  }

  /**
   * Claims one batch, publishes it, marks it and commits, in the calling thread; what the relay
   * thread does in a loop (tests and schedulers of one's own call it directly).
   *
   * @return the rows claimed (published, failed or parked); {@code 0} when none was due
   * @throws RuntimeException when the database failed (the batch's transaction is rolled back: its
   *     rows, published or not, are published again later)
   */
  public int relayOnce() {
    try (SqlSession session = sessions.openSession(ExecutorType.SIMPLE, false)) {
      String ns = outbox.namespace(session);
      List<Map<String, Object>> rows = session.selectList(ns + ".claim", Map.of("maxRows", batchSize));
      for (Map<String, Object> row : rows) {
        if ((stopping.getCount() == 0 && Thread.currentThread() == thread)
            || !publishOne(session, ns, message(row))) {
          break; // closing or interrupted: the rows not yet published stay due, released at commit
        }
      }
      session.commit();
      return rows.size();
    }
  }

  /**
   * Publishes one row and records the outcome in the batch's transaction.
   *
   * @return {@code false} when the thread was interrupted (shutdown): the row is left as it was,
   *     not counted as an attempt, and the batch ends
   */
  private boolean publishOne(SqlSession session, String ns, OutboxMessage message) {
    try {
      publisher.publish(message);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    } catch (Exception e) {
      failures.incrementAndGet();
      boolean park = !retryPolicy.isRetryable(e) || message.attempt() >= retryPolicy.maxAttempts();
      session.update(ns + ".markFailed", Map.of("id", message.id(), "error", errorText(e),
          "backoffMillis", retryPolicy.backoff(message.attempt()).toMillis(), "park", park));
      if (park) {
        LOG.warn("outbox row {} (key {}, destination {}) parked after {} attempt(s): {}",
            message.id(), message.idempotencyKey(), message.destination(), message.attempt(),
            errorText(e));
      } else {
        LOG.debug("outbox row {} attempt {} failed", message.id(), message.attempt(), e);
      }
      return !Thread.currentThread().isInterrupted();
    }
    session.update(ns + ".markSent", Map.of("id", message.id()));
    published.incrementAndGet();
    return !Thread.currentThread().isInterrupted();
  }

  /**
   * Reads the table now (one query) and returns the counts.
   *
   * @throws RuntimeException when the database failed
   */
  public OutboxStats stats() {
    try (SqlSession session = sessions.openSession(ExecutorType.SIMPLE, false)) {
      Map<String, Object> row = session.selectOne(outbox.namespace(session) + ".stats");
      session.rollback();
      OffsetDateTime now = (OffsetDateTime) row.get("now");
      OffsetDateTime oldest = (OffsetDateTime) row.get("oldest");
      OutboxStats stats = new OutboxStats((Long) row.get("backlog"),
          oldest == null ? Duration.ZERO : Duration.between(oldest, now), (Long) row.get("parked"),
          published.get(), failures.get(), now.toInstant());
      lastStats.set(stats);
      return stats;
    }
  }

  /**
   * The counts the relay thread last read (every {@code statsInterval}), with this relay's
   * current {@code published} and {@code failures}; what the Micrometer gauges show. No query.
   */
  public OutboxStats lastStats() {
    OutboxStats s = lastStats.get();
    return new OutboxStats(s.backlog(), s.oldestUnsentAge(), s.parked(), published.get(),
        failures.get(), s.readAt());
  }

  /** The relay's name (its thread's name). */
  public String name() {
    return name;
  }

  /** The table it relays from. */
  public String tableName() {
    return outbox.tableName();
  }

  /**
   * Stops claiming, lets the batch in flight finish (its row in flight published and marked; the
   * rest left due), and waits up to {@code closeTimeout}; then interrupts the thread. Idempotent.
   */
  @Override
  public void close() {
    Thread t;
    synchronized (lifecycle) {
      stopping.countDown();
      t = thread;
    }
    if (t == null || t == Thread.currentThread()) {
      return;
    }
    try {
      t.join(closeTimeout.toMillis());
      if (t.isAlive()) {
        LOG.warn("outbox relay {} still publishing after {}; interrupting it", name, closeTimeout);
        t.interrupt();
        t.join(closeTimeout.toMillis());
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void run() {
    while (stopping.getCount() > 0) {
      int claimed = 0;
      try {
        claimed = relayOnce();
        consecutiveDatabaseFailures = 0;
        if (System.nanoTime() - nextStatsNanos >= 0) {
          nextStatsNanos = System.nanoTime() + statsInterval.toNanos();
          stats();
        }
      } catch (RuntimeException e) {
        consecutiveDatabaseFailures++;
        if (Integer.bitCount(consecutiveDatabaseFailures) == 1) { // 1, 2, 4, 8 …: visible, not a flood
          LOG.warn("outbox relay {}: batch failed ({} in a row), retrying in {}: {}", name,
              consecutiveDatabaseFailures, pollInterval, errorText(e));
        }
      }
      if (claimed < batchSize) {
        try {
          stopping.await(pollInterval.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
          return;
        }
      }
    }
  }

  private OutboxMessage message(Map<String, Object> row) {
    return new OutboxMessage((Long) row.get("id"), (String) row.get("key"),
        (String) row.get("destination"), (String) row.get("orderingKey"),
        (byte[]) row.get("payload"), Outbox.headersFromJson((String) row.get("headers")),
        (Integer) row.get("attempts") + 1, ((OffsetDateTime) row.get("enqueuedAt")).toInstant());
  }

  static String errorText(Throwable e) {
    StringBuilder text = new StringBuilder();
    for (Throwable t = e; t != null && text.length() < MAX_ERROR_LENGTH; t = t.getCause()) {
      if (text.length() > 0) {
        text.append(" <- ");
      }
      text.append(t.getClass().getName());
      if (t.getMessage() != null) {
        text.append(": ").append(t.getMessage());
      }
      if (t.getCause() == t) {
        break;
      }
    }
    return text.length() > MAX_ERROR_LENGTH ? text.substring(0, MAX_ERROR_LENGTH) : text.toString();
  }

  /** Configuration of an {@link OutboxRelay}; {@link #build()} validates and copies it. */
  public static final class Builder {
    private final SqlSessionFactory sessions;
    private final OutboxPublisher publisher;
    private String tableName = Outbox.DEFAULT_TABLE;
    private int batchSize = DEFAULT_BATCH_SIZE;
    private Duration pollInterval = DEFAULT_POLL_INTERVAL;
    private RetryPolicy retryPolicy = DEFAULT_RETRY_POLICY;
    private Duration statsInterval = DEFAULT_STATS_INTERVAL;
    private Duration closeTimeout = DEFAULT_CLOSE_TIMEOUT;
    private String name = "idem-outbox-relay";
    private boolean createTableIfMissing;

    private Builder(SqlSessionFactory sessions, OutboxPublisher publisher) {
      this.sessions = Objects.requireNonNull(sessions, "sessions");
      this.publisher = Objects.requireNonNull(publisher, "publisher");
    }

    /** Default {@value Outbox#DEFAULT_TABLE}; {@code table} or {@code schema.table}. */
    public Builder tableName(String value) {
      this.tableName = Objects.requireNonNull(value, "tableName");
      return this;
    }

    /** Rows per batch (one transaction), default {@value OutboxRelay#DEFAULT_BATCH_SIZE}; >= 1. */
    public Builder batchSize(int value) {
      this.batchSize = value;
      return this;
    }

    /** Wait after a batch that was not full, default {@link OutboxRelay#DEFAULT_POLL_INTERVAL}; > 0. */
    public Builder pollInterval(Duration value) {
      this.pollInterval = Objects.requireNonNull(value, "pollInterval");
      return this;
    }

    /**
     * When a failed row is published again and when it is parked, default {@link
     * OutboxRelay#DEFAULT_RETRY_POLICY}: the next attempt after {@link RetryPolicy#backoff}, parked
     * after {@link RetryPolicy#maxAttempts()} attempts or at once when {@link
     * RetryPolicy#isRetryable} says no (a {@link NonRetryableException}, a declared type).
     */
    public Builder retryPolicy(RetryPolicy value) {
      this.retryPolicy = Objects.requireNonNull(value, "retryPolicy");
      return this;
    }

    /** How often the thread refreshes {@link OutboxRelay#lastStats()}, default 10 s; > 0. */
    public Builder statsInterval(Duration value) {
      this.statsInterval = Objects.requireNonNull(value, "statsInterval");
      return this;
    }

    /** How long {@link OutboxRelay#close()} waits for the batch in flight, default 30 s; >= 0. */
    public Builder closeTimeout(Duration value) {
      this.closeTimeout = Objects.requireNonNull(value, "closeTimeout");
      return this;
    }

    /** The thread's name and the logs', default {@code idem-outbox-relay}. */
    public Builder name(String value) {
      this.name = Objects.requireNonNull(value, "name");
      return this;
    }

    /** Default {@code false}; {@code true} applies {@link Outbox#MIGRATION_RESOURCE} at {@link #build()}. */
    public Builder createTableIfMissing(boolean value) {
      this.createTableIfMissing = value;
      return this;
    }

    /**
     * @throws IllegalArgumentException naming the setting and value that is out of range, or a
     *     table name that is not an identifier
     * @throws IllegalStateException when {@code createTableIfMissing} failed (a missing schema or
     *     privilege); {@link io.idem.StoreUnavailableException} when the database is unreachable
     */
    public OutboxRelay build() {
      Settings.atLeast("batchSize", batchSize, 1);
      Settings.positive("pollInterval", pollInterval);
      Settings.positive("statsInterval", statsInterval);
      Settings.notNegative("closeTimeout", closeTimeout);
      StartupChecks.requireTransactionFactory(sessions.getConfiguration());
      TableName table = TableName.of(tableName);
      if (createTableIfMissing) {
        Outbox.createTableIfMissing(sessions, table);
      }
      return new OutboxRelay(this);
    }
  }
}
