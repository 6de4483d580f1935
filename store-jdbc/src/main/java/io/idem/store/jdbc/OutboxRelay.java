package io.idem.store.jdbc;

import io.idem.NonRetryableException;
import io.idem.RetryPolicy;
import io.idem.spi.OutboxMessage;
import io.idem.spi.OutboxPublishResult;
import io.idem.spi.OutboxPublisher;
import io.idem.spi.Settings;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.apache.ibatis.session.ExecutorType;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes the rows of an {@link Outbox} through an {@link OutboxPublisher}, at least once: one
 * thread that claims due rows in bounded batches, publishes them outside any transaction, and
 * marks the published ones sent in one statement.
 *
 * <ul>
 *   <li><b>Lease.</b> A claim is one short transaction: it writes this relay's lease token into
 *       the rows ({@code leased_by}) and the end of the lease ({@code leaseDuration}) into their
 *       {@code leased_until} (PostgreSQL, V10: in no index, so a HOT update; MariaDB: moves their
 *       {@code next_attempt_at} there), then commits. No row lock is held while a publish waits for
 *       the network. A second relay never takes a leased row; the rows of a relay that died come
 *       back when their lease ends, and are published again with the same idempotency key, so the
 *       next Idem consumer applies them once. A crash between the confirmation and the mark is
 *       the one way a row is published twice. Claims are serialized across relays by a
 *       transaction-level advisory lock held for the claim's milliseconds (MariaDB: a named lock,
 *       {@code GET_LOCK}, released after the claim's COMMIT, the claim at READ COMMITTED).
 *   <li><b>Batches.</b> A publisher that overrides {@link OutboxPublisher#publishAll} gets the
 *       claimed batch in one call (it sends every row and waits once) and answers per row: the
 *       sent rows are marked in one statement, a failed row is charged as below (only its key's
 *       first failure in the batch), a skipped row is released uncharged; a throw of {@code
 *       publishAll} is a destination outage, charged to no row. Any other publisher's rows are
 *       published one by one, the batch ending at the first outage, at {@link #close()} and at
 *       half the lease.
 *   <li><b>Pipeline.</b> The relay thread keeps two batches in flight: while it publishes batch
 *       n, a second thread writes batch n-1's settlement (sent mark, charges, releases) and claims
 *       batch n+1 in one short transaction, so the publisher rarely waits for the database.
 *       Publishing stays sequential (batch n+1 starts once the publisher has answered for every
 *       row of batch n), rows are marked only once confirmed, and the claim never takes a key
 *       with a row in flight (its head is leased, so not due): per key, no row is published
 *       before the rows before it are confirmed. A batch of one ordering key (a hot key) is
 *       published without a claim beside it: its next rows come with the round that marks it. An
 *       outage or {@link #close()} releases the
 *       claimed batch uncharged; a claimed batch that waited for half of its lease is released
 *       too. {@link #relayOnce()} does one claim, publish and mark in sequence.
 *   <li><b>Order.</b> Rows with one ordering key are published in id order among the rows
 *       committed when the relay claims (see docs/OUTBOX.md): per key the claim takes the first
 *       rows in id order, up to {@code batchSize}, when the key's lowest-id unsent row is due, and
 *       the relay stops the key at its first failure in the batch. A key whose lowest unsent row
 *       is in flight, backing off or parked holds every row behind it.
 *   <li><b>What is charged to a row.</b> What the publisher throws for a row ({@link Throwable},
 *       an {@link Error} included) is classified ({@link OutboxFailureKind}, default {@link
 *       OutboxFailures#classify}). A {@link OutboxFailureKind#ROW row failure} is one attempt: the
 *       row is retried after the {@link RetryPolicy}'s backoff, and parked with the reason after
 *       {@code maxAttempts} attempts or at once when no retry can succeed ({@link
 *       OutboxFailures#isRetryable}: a {@link NonRetryableException} or a declared non-retryable
 *       type anywhere in the cause chain, a broker client's own refusal for good). A {@link
 *       OutboxFailureKind#DESTINATION_UNAVAILABLE destination outage} is charged to no row: the
 *       batch ends, its unpublished rows are due again, and the relay waits the policy's backoff
 *       (1st, 2nd … outage in a row) before its next claim. A database failure is charged to no
 *       row either: the relay logs it and claims again after {@code pollInterval}.
 *   <li><b>Pace.</b> The relay claims again at once while rows are due; it sleeps {@code
 *       pollInterval} only when a claim over every ordering key found nothing due. A claim reads
 *       the due unordered rows through an index and one index probe per ordering key with unsent
 *       rows (at most {@code batchSize} keys per claim, in turn), never the rows behind a blocked
 *       key's head: its cost does not grow with a blocked backlog.
 *   <li><b>Liveness.</b> The thread survives anything a publisher or the database throws: it
 *       logs at ERROR (with the row id for a publisher's {@code Error}) and goes on. {@link
 *       #isRunning()}, {@link #health()} and {@link #lastStats()} say whether it runs, when it last
 *       published and claimed.
 * </ul>
 *
 * <p>Thread-safe; {@link #start()} once, {@link #close()} finishes the row in flight, leaves the
 * rest of its batch (and the batch claimed behind it) due and stops. The publisher is not closed by the relay. Keep {@code
 * leaseDuration} above the time a batch takes to publish (the relay stops publishing a batch once
 * half of its lease has passed, and leaves the rest due).
 */
public final class OutboxRelay implements AutoCloseable {
  /**
   * Default rows per batch (one claim, one mark) for a publisher that publishes row by row (does
   * not override {@link OutboxPublisher#publishAll}): {@value}. Its rows go out one by one within
   * half of the lease.
   */
  public static final int DEFAULT_BATCH_SIZE = 100;
  /**
   * Default rows per batch for a publisher that overrides {@link OutboxPublisher#publishAll} (the
   * Kafka, RabbitMQ, SQS and JMS publishers): {@value}. The relay is bound by its rounds (one
   * short transaction per batch), so a larger batch moves more rows per round; the batch is one
   * call and one wait for the confirmations.
   */
  public static final int DEFAULT_PUBLISH_ALL_BATCH_SIZE = 500;
  /** Default wait after a claim over every ordering key found nothing due: 200 ms. */
  public static final Duration DEFAULT_POLL_INTERVAL = Duration.ofMillis(200);
  /**
   * Default {@link Builder#retryPolicy retry policy}: 10 attempts before a row is parked, 1 s
   * after the first failure doubling up to 5 min, ±20 % jitter; also the relay's backoff while
   * the destination is unavailable.
   */
  public static final RetryPolicy DEFAULT_RETRY_POLICY = RetryPolicy.builder().maxAttempts(10)
      .initialBackoff(Duration.ofSeconds(1)).maxBackoff(Duration.ofMinutes(5)).build();
  /** Default interval at which the relay thread refreshes {@link #lastStats()}: 10 s. */
  public static final Duration DEFAULT_STATS_INTERVAL = Duration.ofSeconds(10);
  /** Default time {@link #close()} waits for the batch in flight: 30 s. */
  public static final Duration DEFAULT_CLOSE_TIMEOUT = Duration.ofSeconds(30);
  /**
   * Default lease of a claimed batch: 1 min (twice the publishers' default 30 s timeouts, so that
   * a publish started before half the lease ends within it).
   */
  public static final Duration DEFAULT_LEASE_DURATION = Duration.ofMinutes(1);
  /** Longest stored error text, in characters: {@value}. */
  static final int MAX_ERROR_LENGTH = 2000;
  /** MariaDB: how long a claim waits for another relay's claim lock (GET_LOCK), in seconds. */
  static final int CLAIM_LOCK_WAIT_SECONDS = 30;
  /** The advisory lock class of the claim lock (the table's name hash is the other half). */
  private static final int CLAIM_LOCK_CLASS = 0x1de0_0b0c;

  private static final Logger LOG = LoggerFactory.getLogger(OutboxRelay.class);

  private final SqlSessionFactory sessions;
  private final OutboxPublisher publisher;
  /** The publisher overrides publishAll: one call per batch, else one publish per row. */
  private final boolean batches;
  private final Outbox outbox;
  private final int batchSize;
  private final Duration pollInterval;
  private final RetryPolicy retryPolicy;
  private final Duration statsInterval;
  private final Duration closeTimeout;
  private final Duration leaseDuration;
  private final Function<Throwable, OutboxFailureKind> classifier;
  private final String name;
  /** Written into leased_by: unique per relay instance, even when two share a name. */
  private final String leaseToken;
  private final CountDownLatch stopping = new CountDownLatch(1);
  private final AtomicLong published = new AtomicLong();
  private final AtomicLong failures = new AtomicLong();
  private final AtomicLong claims = new AtomicLong();
  private final AtomicReference<OutboxStats> lastStats;
  private final Object lifecycle = new Object();
  private volatile @Nullable Thread thread;
  private volatile boolean threadEnded;
  private volatile @Nullable Instant lastPublishAt;
  private volatile @Nullable Instant lastCycleAt;
  private volatile @Nullable Instant destinationUnavailableUntil;
  private volatile @Nullable String lastError;
  private volatile int consecutiveDatabaseFailures;
  /** Outages in a row (the circuit breaker's backoff exponent); only the relay thread writes it. */
  private int consecutiveOutages;
  /** The last ordering key the previous claim visited; the next claim goes on after it. */
  private volatile @Nullable String keyCursor;
  private long nextStatsNanos;
  /** The table's database, read once from the first claim's connection. */
  private volatile @Nullable Dialect dialect;

  private OutboxRelay(Builder b) {
    this.sessions = b.sessions;
    this.publisher = b.publisher;
    this.batches = batches(b.publisher);
    this.outbox = Outbox.of(b.tableName);
    this.batchSize = b.batchSize != null ? b.batchSize
        : batches ? DEFAULT_PUBLISH_ALL_BATCH_SIZE : DEFAULT_BATCH_SIZE;
    this.pollInterval = b.pollInterval;
    this.retryPolicy = b.retryPolicy;
    this.statsInterval = b.statsInterval;
    this.closeTimeout = b.closeTimeout;
    this.leaseDuration = b.leaseDuration;
    this.classifier = OutboxFailures.withDefault(b.classifier);
    this.name = b.name;
    this.leaseToken = abbreviate(b.name, 200) + "/" + UUID.randomUUID();
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
      t.setUncaughtExceptionHandler((th, e) -> LOG.error("outbox relay {} stopped: {}", name, errorText(e), e));
      thread = t;
      t.start();
    }
  }

  /**
   * Claims one batch, publishes it and marks it, in the calling thread; what the relay thread
   * does in a loop (tests and schedulers of one's own call it directly). Ignores the destination
   * circuit breaker (the loop honours it).
   *
   * @return the rows claimed (published, failed, parked or left due); {@code 0} when none was due
   * @throws RuntimeException when the database failed (charged to no row: rows claimed and not
   *     marked come back when their lease ends)
   */
  public int relayOnce() {
    long claimedAt = System.nanoTime();
    List<OutboxMessage> batch = round(Settlement.NONE, true);
    if (batch.isEmpty()) {
      return 0;
    }
    Decided decided = publishAndDecide(batch, claimedAt);
    boolean interrupted = Thread.interrupted(); // JDBC below must not see the shutdown's interrupt
    try {
      round(decided.settlement(), false);
    } catch (RuntimeException databaseFailure) {
      // Keep what was published (marked sent if the database lets us); the rest comes back when
      // its lease ends. The failure is the database's, charged to no row.
      Settlement s = decided.settlement();
      if (!s.sent().isEmpty()) {
        try {
          round(new Settlement(s.sent(), List.of(), List.of()), false);
        } catch (RuntimeException alsoFailed) {
          databaseFailure.addSuppressed(alsoFailed);
        }
      }
      throw databaseFailure;
    } finally {
      if (interrupted || decided.interrupted()) {
        Thread.currentThread().interrupt();
      }
    }
    return batch.size();
  }

  /**
   * What publishing a batch leaves to write, all in one transaction: the rows confirmed (marked
   * sent), the failed attempts charged to their rows, the rows left due uncharged (released).
   */
  private record Settlement(List<Long> sent, List<Charge> charges, List<Long> left) {
    static final Settlement NONE = new Settlement(List.of(), List.of(), List.of());

    boolean isEmpty() {
      return sent.isEmpty() && charges.isEmpty() && left.isEmpty();
    }

    /** This settlement and {@code other}'s. */
    Settlement and(Settlement other) {
      if (other.isEmpty()) {
        return this;
      }
      if (isEmpty()) {
        return other;
      }
      List<Long> s = new ArrayList<>(sent);
      s.addAll(other.sent);
      List<Charge> c = new ArrayList<>(charges);
      c.addAll(other.charges);
      List<Long> l = new ArrayList<>(left);
      l.addAll(other.left);
      return new Settlement(s, c, l);
    }

    /** This settlement with the rows of {@code batch} (claimed, not published) released too. */
    Settlement releasing(List<OutboxMessage> batch) {
      List<Long> ids = new ArrayList<>(batch.size());
      for (OutboxMessage m : batch) {
        ids.add(m.id());
      }
      return and(new Settlement(List.of(), List.of(), ids));
    }
  }

  /** A failed attempt charged to its row: retried after the policy's backoff, or parked. */
  private record Charge(OutboxMessage message, Throwable failure, boolean park) {}

  /** What publishing a batch did: what to write, whether an outage or an interrupt (shutdown) ended it. */
  private record Decided(Settlement settlement, boolean outage, boolean interrupted) {}

  /**
   * Publishes {@code batch} (claimed at {@code claimedAt}, {@link System#nanoTime()}) and decides
   * each row's fate; writes nothing (the caller writes the settlement once the publisher has
   * answered for every row). A destination outage opens the circuit here.
   */
  private Decided publishAndDecide(List<OutboxMessage> batch, long claimedAt) {
    Published published = batches ? publishBatch(batch, claimedAt) : publishOneByOne(batch, claimedAt);
    boolean outage = published.outage;
    List<Long> sent = new ArrayList<>();
    List<Long> left = new ArrayList<>();
    List<Charge> charges = new ArrayList<>();
    Set<String> stoppedKeys = new HashSet<>();
    for (OutboxMessage message : batch) {
      OutboxPublishResult result = published.results.get(message.id());
      String orderingKey = message.orderingKey();
      if (result != null && result.status() == OutboxPublishResult.Status.SENT) {
        sent.add(message.id()); // confirmed: marked sent, whatever else happened in the batch
        consecutiveOutages = 0;
        continue;
      }
      boolean keyStopped = orderingKey != null && !stoppedKeys.add(orderingKey);
      if (result == null || result.status() == OutboxPublishResult.Status.SKIPPED || keyStopped) {
        left.add(message.id()); // not attempted, or behind its key's first failure: uncharged
        continue;
      }
      Throwable failure = Objects.requireNonNull(result.failure());
      if (failure instanceof InterruptedException && (stopping.getCount() == 0 || published.interrupted)) {
        left.add(message.id()); // shutdown: the row was not attempted
        continue;
      }
      if (failure instanceof Error) {
        LOG.error("outbox relay {}: the publisher threw {} for outbox row {} (key {}, destination {})",
            name, failure.getClass().getName(), message.id(), message.idempotencyKey(),
            message.destination(), failure);
      }
      OutboxFailureKind known = published.kinds.get(message.id());
      OutboxFailureKind kind = known != null ? known : kindOf(failure);
      lastError = "row " + message.id() + ": " + errorText(failure);
      if (kind == OutboxFailureKind.DESTINATION_UNAVAILABLE) {
        left.add(message.id());
        if (!outage) {
          outage = true;
          openCircuit(message, failure);
        }
      } else {
        boolean park = !OutboxFailures.isRetryable(failure, retryPolicy) || message.attempt() >= retryPolicy.maxAttempts();
        charges.add(new Charge(message, failure, park));
      }
    }
    return new Decided(new Settlement(sent, charges, left), outage, published.interrupted);
  }

  /**
   * What publishing a batch did: each row's result by id (a row without one was not attempted),
   * the failures classified already (the classifier runs once per failure), whether a throw of
   * {@link OutboxPublisher#publishAll} ended it as an outage (the circuit is
   * open already), whether an interrupt (shutdown) ended it.
   */
  private record Published(Map<Long, OutboxPublishResult> results, Map<Long, OutboxFailureKind> kinds,
      boolean outage, boolean interrupted) {}

  /**
   * A publisher of one row at a time (it does not override {@link OutboxPublisher#publishAll}):
   * in id order, the key stopping at its first failure, the batch ending at a destination outage,
   * at {@code close()} and when half of the lease has passed.
   */
  private Published publishOneByOne(List<OutboxMessage> batch, long claimedAt) {
    Map<Long, OutboxPublishResult> results = new HashMap<>();
    Map<Long, OutboxFailureKind> kinds = new HashMap<>();
    Set<String> stoppedKeys = new HashSet<>();
    boolean interrupted = false;
    for (OutboxMessage message : batch) {
      if (message.orderingKey() != null && stoppedKeys.contains(message.orderingKey())) {
        continue;
      }
      if ((stopping.getCount() == 0 && Thread.currentThread() == thread)
          || System.nanoTime() - claimedAt > leaseDuration.toNanos() / 2) {
        break; // closing, or the lease is half gone: the rest stays due for the next claim
      }
      Throwable failure = publish(message);
      if (failure == null) {
        results.put(message.id(), OutboxPublishResult.sent(message));
        continue;
      }
      if (failure instanceof InterruptedException && (stopping.getCount() == 0 || Thread.currentThread().isInterrupted())) {
        interrupted = Thread.interrupted();
        break; // shutdown: the row was not attempted
      }
      results.put(message.id(), OutboxPublishResult.failed(message, failure));
      if (message.orderingKey() != null) {
        stoppedKeys.add(message.orderingKey());
      }
      OutboxFailureKind kind = kindOf(failure);
      kinds.put(message.id(), kind);
      if (kind == OutboxFailureKind.DESTINATION_UNAVAILABLE) {
        break; // the rest of the batch would wait for the same outage: due again, uncharged
      }
    }
    return new Published(results, kinds, false, interrupted);
  }

  /**
   * A batching publisher: one {@link OutboxPublisher#publishAll} for the batch, unless it waited
   * for half of its lease already (then it is left due). What it throws is a destination outage
   * (the batch uncharged, the circuit opens); an interrupt is a shutdown.
   */
  private Published publishBatch(List<OutboxMessage> batch, long claimedAt) {
    if (System.nanoTime() - claimedAt > leaseDuration.toNanos() / 2) {
      // It waited behind the batch before it for half of its lease: due again, uncharged.
      LOG.warn("outbox relay {}: a batch of {} rows from outbox row {} waited more than half of its lease ({})"
          + " to be published; left due for the next claim", name, batch.size(), batch.get(0).id(), leaseDuration);
      return new Published(Map.of(), Map.of(), false, false);
    }
    List<OutboxPublishResult> list;
    try {
      list = publisher.publishAll(List.copyOf(batch));
    } catch (Throwable e) {
      if (e instanceof InterruptedException) {
        return new Published(Map.of(), Map.of(), false, true);
      }
      if (e instanceof Error) {
        LOG.error("outbox relay {}: the publisher's publishAll threw {} for a batch of {} rows from outbox row {};"
            + " no row charged", name, e.getClass().getName(), batch.size(), batch.get(0).id(), e);
      }
      lastError = "batch from row " + batch.get(0).id() + ": " + errorText(e);
      openCircuit(batch.get(0), e);
      return new Published(Map.of(), Map.of(), true, Thread.interrupted());
    }
    Map<Long, OutboxPublishResult> results = new HashMap<>();
    if (list != null) {
      for (OutboxPublishResult r : list) {
        if (r != null) {
          results.putIfAbsent(r.id(), r);
        }
      }
    }
    if (results.size() != batch.size()) {
      LOG.error("outbox relay {}: the publisher returned {} results for a batch of {} rows; the rows without"
          + " one are due again, uncharged", name, list == null ? 0 : list.size(), batch.size());
    }
    return new Published(results, Map.of(), false, Thread.interrupted());
  }

  /** Publishes one row; returns what it threw (anything), or {@code null} once confirmed. */
  private @Nullable Throwable publish(OutboxMessage message) {
    try {
      publisher.publish(message);
      return null;
    } catch (Throwable e) { // an Error of a serializer is this row's failure, not the relay's end
      return e;
    }
  }

  /** Whether {@code publisher} overrides {@link OutboxPublisher#publishAll} (sends batches). */
  static boolean batches(OutboxPublisher publisher) {
    Class<?> type = publisher.getClass();
    if (java.lang.reflect.Proxy.isProxyClass(type)) {
      return false; // a JDK proxy declares every method: whether its target batches is not known
    }
    while (type.getName().contains("$$") && type.getSuperclass() != null
        && OutboxPublisher.class.isAssignableFrom(type.getSuperclass())) {
      type = type.getSuperclass(); // a generated subclass (CGLIB, ByteBuddy: Spring AOP): its target's
    }
    try {
      return type.getMethod("publishAll", List.class).getDeclaringClass() != OutboxPublisher.class;
    } catch (NoSuchMethodException e) {
      return false;
    }
  }

  private OutboxFailureKind kindOf(Throwable failure) {
    try {
      return classifier.apply(failure);
    } catch (RuntimeException e) {
      LOG.error("outbox relay {}: the failure classifier threw; the failure counts as the row's", name, e);
      return OutboxFailureKind.ROW;
    }
  }

  private void openCircuit(OutboxMessage message, Throwable failure) {
    consecutiveOutages++;
    Duration wait = retryPolicy.backoff(consecutiveOutages);
    destinationUnavailableUntil = Instant.now().plus(wait);
    if (Integer.bitCount(consecutiveOutages) == 1) { // 1, 2, 4, 8 …: visible, not a flood
      LOG.warn("outbox relay {}: destination {} unavailable ({} in a row) at row {}; no row charged,"
              + " next try in {}: {}", name, message.destination(), consecutiveOutages, message.id(),
          wait, errorText(failure));
    }
  }

  /** Writes {@code s} in {@code session}'s transaction: the sent mark, the charges, the releases. */
  private void write(SqlSession session, String ns, Settlement s) {
    if (!s.sent().isEmpty()) {
      session.update(ns + ".markSent", Map.of("ids", s.sent()));
    }
    for (Charge c : s.charges()) {
      session.update(ns + ".markFailed", Map.of("id", c.message().id(), "error", errorText(c.failure()),
          "backoffMillis", retryPolicy.backoff(c.message().attempt()).toMillis(), "park", c.park(),
          "relay", leaseToken));
    }
    if (!s.left().isEmpty()) {
      session.update(ns + ".release", Map.of("ids", s.left(), "relay", leaseToken));
    }
  }

  /** After the commit of {@code s}: the counters and the logs. */
  private void written(Settlement s) {
    if (!s.sent().isEmpty()) {
      published.addAndGet(s.sent().size());
      lastPublishAt = Instant.now();
    }
    for (Charge c : s.charges()) {
      failures.incrementAndGet();
      OutboxMessage message = c.message();
      if (c.park()) {
        LOG.warn("outbox row {} (key {}, destination {}) parked after {} attempt(s): {}",
            message.id(), message.idempotencyKey(), message.destination(), message.attempt(),
            errorText(c.failure()));
      } else {
        LOG.debug("outbox row {} attempt {} failed", message.id(), message.attempt(), c.failure());
      }
    }
  }

  /** What a claim took, and where the next claim goes on. */
  private record Claim(List<OutboxMessage> batch, @Nullable String nextCursor) {}

  /**
   * One short transaction: writes {@code settlement} (the marks of the batch published last) and,
   * with {@code claimNext}, claims the next batch. The claim lock is taken first, so the marks'
   * row locks are only ever taken under it (two relays cannot wait for each other). Nothing of it
   * is kept when it fails (the caller writes the settlement again: every statement of it is
   * idempotent).
   *
   * @return the claimed batch in id order (empty without {@code claimNext})
   */
  private List<OutboxMessage> round(Settlement settlement, boolean claimNext) {
    if (!claimNext && settlement.isEmpty()) {
      return List.of();
    }
    Claim claim = null;
    try (SqlSession session = sessions.openSession(ExecutorType.SIMPLE, false)) {
      String ns = outbox.namespace(session);
      Dialect dialect = dialect(session);
      Map<String, Object> lock = Map.of("lockClass", CLAIM_LOCK_CLASS, "table", outbox.tableName(),
          "waitSeconds", CLAIM_LOCK_WAIT_SECONDS);
      // MariaDB: the claim lock is the connection's named lock (GET_LOCK), not the transaction's,
      // so it is released after the COMMIT or the rollback; the transaction runs at READ COMMITTED
      // (set before its first statement): a fresh read per statement, no gap locks
      boolean namedLock = claimNext && dialect == Dialect.MARIADB;
      if (namedLock) {
        session.update(ns + ".claimIsolation");
        Integer taken = session.selectOne(ns + ".claimLock", lock);
        if (taken == null || taken != 1) {
          throw new IllegalStateException("another relay of " + outbox.tableName() + " held the claim lock for"
              + " more than " + CLAIM_LOCK_WAIT_SECONDS + " s");
        }
      } else if (claimNext) {
        session.selectOne(ns + ".claimLock", lock);
      }
      try {
        write(session, ns, settlement);
        if (claimNext) {
          claim = claim(session, ns, dialect);
        }
        session.commit(true); // forced: MyBatis counts an UPDATE … RETURNING run as a select as clean
      } catch (RuntimeException e) {
        if (namedLock) {
          try {
            session.rollback(true);
            session.selectOne(ns + ".claimUnlock", lock);
          } catch (RuntimeException alsoFailed) { // a lost connection takes its named lock with it
            e.addSuppressed(alsoFailed);
          }
        }
        throw e;
      }
      if (namedLock) {
        session.selectOne(ns + ".claimUnlock", lock); // after the COMMIT
      }
    }
    written(settlement);
    if (claim == null) {
      return List.of();
    }
    claims.incrementAndGet();
    keyCursor = claim.nextCursor();
    lastCycleAt = Instant.now();
    return claim.batch();
  }

  /**
   * The claim, in {@code session}'s transaction (which holds the claim lock): the heads of the
   * next ordering keys, the lease. The next cursor is the last key visited, or {@code null} (back
   * to the first) when the scan reached the end of the keys. PostgreSQL leases the rows in the
   * claim statement itself ({@code UPDATE … RETURNING}); MariaDB has no {@code UPDATE … RETURNING},
   * so its claim reads the rows and {@code lease} writes the lease by primary key in the same
   * transaction.
   */
  private Claim claim(SqlSession session, String ns, Dialect dialect) {
    Map<String, Object> headParams = new HashMap<>();
    headParams.put("after", keyCursor);
    headParams.put("maxKeys", batchSize);
    List<Map<String, Object>> heads = session.selectList(ns + ".heads", headParams);
    List<String> keys = new ArrayList<>();
    for (Map<String, Object> head : heads) {
      Object due = head.get("due"); // PostgreSQL: a boolean; MariaDB: 1 or 0
      if (Boolean.TRUE.equals(due) || (due instanceof Number n && n.intValue() == 1)) {
        keys.add((String) head.get("orderingKey"));
      }
    }
    List<Map<String, Object>> rows = session.selectList(ns + ".claim", Map.of("keys", keys, "maxRows", batchSize,
        "leaseMillis", leaseDuration.toMillis(), "relay", leaseToken));
    if (dialect == Dialect.MARIADB && !rows.isEmpty()) {
      List<Long> ids = rows.stream().map(r -> Rows.requiredLong(r, "id")).toList();
      session.update(ns + ".lease", Map.of("ids", ids, "leaseMillis", leaseDuration.toMillis(),
          "relay", leaseToken));
    }
    List<OutboxMessage> batch = new ArrayList<>(rows.size());
    for (Map<String, Object> row : rows) {
      batch.add(message(row));
    }
    batch.sort(Comparator.comparingLong(OutboxMessage::id));
    return new Claim(batch, heads.size() < batchSize ? null : (String) heads.get(heads.size() - 1).get("orderingKey"));
  }

  /** The database of the relay's table, read from the first session's connection. */
  private Dialect dialect(SqlSession session) {
    Dialect d = dialect;
    if (d == null) {
      d = Outbox.dialect(session);
      dialect = d;
    }
    return d;
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
      if (row == null) {
        throw new IllegalStateException("the outbox stats query of " + tableName() + " returned no row");
      }
      Instant now = Rows.requiredInstant(row, "now");
      Instant oldest = Rows.optionalInstant(row, "oldest");
      OutboxStats stats = new OutboxStats(Rows.requiredLong(row, "backlog"),
          oldest == null ? Duration.ZERO : Duration.between(oldest, now), Rows.requiredLong(row, "parked"),
          published.get(), failures.get(), now);
      lastStats.set(stats);
      return stats;
    }
  }

  /**
   * Rows per batch this relay claims: {@link Builder#batchSize} if set, else the default for its
   * publisher ({@value #DEFAULT_PUBLISH_ALL_BATCH_SIZE} when it overrides {@link
   * OutboxPublisher#publishAll}, {@value #DEFAULT_BATCH_SIZE} otherwise). Constant.
   */
  public int batchSize() {
    return batchSize;
  }

  /**
   * The counts the relay thread last read (every {@code statsInterval}), with this relay's
   * current {@code published} and {@code failures}; what the Micrometer gauges show. No query.
   * While the relay runs, {@link OutboxStats#readAt()} keeps moving; when it stops, {@link
   * #isRunning()} and {@link #health()} say so.
   */
  public OutboxStats lastStats() {
    OutboxStats s = Objects.requireNonNull(lastStats.get(), "lastStats"); // set at construction
    return new OutboxStats(s.backlog(), s.oldestUnsentAge(), s.parked(), published.get(),
        failures.get(), s.readAt());
  }

  /**
   * True while the relay thread is alive and the relay was not closed; false before {@link
   * #start()}, after {@link #close()}, and if the thread ended otherwise (logged at ERROR).
   */
  public boolean isRunning() {
    Thread t = thread;
    return t != null && t.isAlive() && !threadEnded && stopping.getCount() > 0;
  }

  /** The relay's state now, from memory (no query); what a health indicator shows. */
  public OutboxRelayHealth health() {
    Instant until = destinationUnavailableUntil;
    return new OutboxRelayHealth(isRunning(), lastPublishAt, lastCycleAt,
        until != null && until.isAfter(Instant.now()) ? until : null,
        consecutiveDatabaseFailures, lastError, lastStats());
  }

  /** Claims this relay made (the claim transactions that committed, empty ones included). */
  public long claimCount() {
    return claims.get();
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
   * Stops claiming, lets the row in flight finish (published and marked; the rest of its batch
   * left due, not charged), and waits up to {@code closeTimeout}; then interrupts the thread.
   * Idempotent.
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
    try {
      loop();
    } catch (Throwable e) { // not reached by design; if it is, say so loudly
      lastError = "relay stopped: " + errorText(e);
      LOG.error("outbox relay {} stopped: {}", name, errorText(e), e);
    } finally {
      threadEnded = true;
      if (stopping.getCount() > 0) {
        LOG.error("outbox relay {} is no longer running although it was not closed; rows stay unsent"
            + " until a relay runs", name);
      }
    }
  }

  private void loop() {
    ExecutorService database = Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, name + "-db");
      t.setDaemon(true);
      return t;
    });
    try {
      pipeline(database);
    } finally {
      database.shutdownNow();
    }
  }

  /**
   * The relay thread's loop, two batches in flight: while this thread publishes batch n, the
   * database thread writes the settlement of batch n-1 and claims batch n+1 in one transaction
   * (a round). Publishing stays strictly sequential: batch n+1 is published only once the
   * publisher has answered for every row of batch n. A key with a row in flight is not claimed
   * (its head is leased, so not due), so no later row of it is published before its earlier rows
   * are confirmed and marked. The rows of a batch are marked only after their confirmation.
   */
  private void pipeline(ExecutorService database) {
    Settlement pending = Settlement.NONE; // of the batch published last, not yet written
    List<OutboxMessage> claimed = List.of(); // claimed, not yet published
    long claimedAt = 0;
    boolean idle = false; // the last claim went over every key, found nothing due, nothing in flight
    boolean failed = false; // the last round failed: its settlement is written alone before a claim
    while (true) {
      boolean stop = stopping.getCount() == 0 || Thread.currentThread().isInterrupted();
      Instant until = destinationUnavailableUntil;
      boolean open = until != null && until.isAfter(Instant.now());
      if ((stop || open) && !claimed.isEmpty()) {
        pending = pending.releasing(claimed); // not published: due again, uncharged
        claimed = List.of();
      }
      if (pending.isEmpty() && claimed.isEmpty()) {
        if (stop) {
          return;
        }
        Duration wait = open ? Duration.between(Instant.now(), until) : idle ? pollInterval : Duration.ZERO;
        idle = false;
        if (!wait.isNegative() && !wait.isZero()) {
          if (!pause(wait)) {
            return;
          }
          continue;
        }
      }
      boolean claimNext = !stop && !open && !(failed && !pending.isEmpty())
          && (claimed.isEmpty() || overlaps(claimed));
      Settlement toWrite = pending;
      String startCursor = keyCursor;
      long roundAt = System.nanoTime();
      Future<List<OutboxMessage>> round = database.submit(() -> round(toWrite, claimNext));
      Decided decided = claimed.isEmpty() ? null : publishGuarded(claimed, claimedAt);
      try {
        List<OutboxMessage> next = await(round);
        if (claimNext || !toWrite.isEmpty()) { // the round used the database
          if (consecutiveDatabaseFailures > 0) {
            LOG.info("outbox relay {}: the database is back after {} failure(s)", name, consecutiveDatabaseFailures);
          }
          consecutiveDatabaseFailures = 0;
        }
        failed = false;
        pending = Settlement.NONE;
        claimed = next;
        claimedAt = roundAt;
        idle = claimNext && next.isEmpty() && decided == null && startCursor == null && keyCursor == null;
      } catch (Throwable e) { // the database (or anything else): charged to no row
        pending = toWrite; // written again (alone) before the next claim: its statements are idempotent
        claimed = List.of(); // nothing claimed (rolled back; if it committed after all, back after its lease)
        failed = true;
        if (!stop) {
          databaseFailed(e);
        }
      }
      if (decided != null) {
        pending = pending.and(decided.settlement());
        if (!decided.outage()) {
          destinationUnavailableUntil = null;
        }
        if (decided.interrupted()) {
          Thread.currentThread().interrupt();
        }
      }
      if (failed && stop) {
        Settlement s = pending;
        LOG.warn("outbox relay {}: closing with the marks of {} row(s) unwritten (the database failed); they"
            + " come back when their lease ends", name, s.sent().size() + s.charges().size() + s.left().size());
        return;
      }
      if (!failed) {
        try {
          refreshStats();
        } catch (Throwable e) { // the stats query: charged to no row, nothing to write again
          failed = true;
          databaseFailed(e);
        }
      }
      if (failed && !pause(pollInterval)) {
        Thread.currentThread().interrupt(); // the next turn writes what it can, then ends
      }
    }
  }

  /**
   * {@link #publishAndDecide}, surviving anything it throws (not expected: a publisher's
   * throwables are the rows' results): the batch is then left due, uncharged.
   */
  private Decided publishGuarded(List<OutboxMessage> batch, long claimedAt) {
    try {
      return publishAndDecide(batch, claimedAt);
    } catch (Throwable e) {
      lastError = "batch from row " + batch.get(0).id() + ": " + errorText(e);
      LOG.error("outbox relay {}: publishing a batch of {} rows from outbox row {} failed; left due, no row"
          + " charged", name, batch.size(), batch.get(0).id(), e);
      return new Decided(Settlement.NONE.releasing(batch), false, Thread.interrupted());
    }
  }

  /**
   * Whether to claim the next batch while {@code batch} publishes: unless every row of it has one
   * ordering key (a hot key draining: the claim could take no row of that key, all leased, and
   * most likely finds nothing else; its next rows are claimed in the round that marks it).
   */
  private static boolean overlaps(List<OutboxMessage> batch) {
    String key = batch.get(0).orderingKey();
    for (OutboxMessage m : batch) {
      if (m.orderingKey() == null || !m.orderingKey().equals(key)) {
        return true;
      }
    }
    return false;
  }

  /** Waits for the round; an interrupt meanwhile (a shutdown) is kept for after it. */
  private static <T> T await(Future<T> round) throws Throwable {
    boolean interrupted = false;
    try {
      while (true) {
        try {
          return round.get();
        } catch (InterruptedException e) {
          interrupted = true;
        } catch (ExecutionException e) {
          throw e.getCause() == null ? e : e.getCause();
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** Waits {@code wait} or until closed; {@code false} when interrupted. */
  private boolean pause(Duration wait) {
    try {
      stopping.await(wait.toMillis(), TimeUnit.MILLISECONDS);
      return true;
    } catch (InterruptedException e) {
      return false;
    }
  }

  /** A failed round: logged (1st, 2nd, 4th … failure in a row), charged to no row. */
  private void databaseFailed(Throwable e) {
    consecutiveDatabaseFailures++;
    lastError = errorText(e);
    if (lastError.contains("leased_by") && Integer.bitCount(consecutiveDatabaseFailures) == 1) {
      LOG.error("outbox relay {}: table {} has no leased_by column: apply {} (Flyway does, as does"
          + " createTableIfMissing); the relay cannot claim until then", name, outbox.tableName(),
          Outbox.LEASE_MIGRATION_RESOURCE);
    }
    if (lastError.contains("leased_until") && Integer.bitCount(consecutiveDatabaseFailures) == 1) {
      LOG.error("outbox relay {}: table {} has no leased_until column: apply {} (Flyway does, as does"
          + " createTableIfMissing); the relay cannot claim until then", name, outbox.tableName(),
          Outbox.LEASE_UNTIL_MIGRATION_RESOURCE);
    }
    if (lastError.contains("traceparent") && Integer.bitCount(consecutiveDatabaseFailures) == 1) {
      LOG.error("outbox relay {}: table {} has no traceparent column: apply {} (Flyway does, as does"
          + " createTableIfMissing); the relay cannot claim until then", name, outbox.tableName(),
          Outbox.TRACEPARENT_MIGRATION_RESOURCE);
    }
    if (Integer.bitCount(consecutiveDatabaseFailures) == 1) { // 1, 2, 4, 8 …: visible, not a flood
      LOG.error("outbox relay {}: the batch failed ({} in a row), no row charged, retrying in {}: {}",
          name, consecutiveDatabaseFailures, pollInterval, errorText(e), e);
    }
  }

  private void refreshStats() {
    if (System.nanoTime() - nextStatsNanos >= 0) {
      nextStatsNanos = System.nanoTime() + statsInterval.toNanos();
      stats();
    }
  }

  private OutboxMessage message(Map<String, Object> row) {
    return new OutboxMessage(Rows.requiredLong(row, "id"), Rows.required(row, "key", String.class),
        Rows.required(row, "destination", String.class), Rows.optional(row, "orderingKey", String.class),
        Rows.required(row, "payload", byte[].class), Outbox.headersFromJson(Rows.required(row, "headers", String.class)),
        (int) Rows.requiredLong(row, "attempts") + 1, Rows.requiredInstant(row, "enqueuedAt"),
        Rows.optional(row, "traceparent", String.class));
  }

  private static String abbreviate(String text, int max) {
    return text.length() <= max ? text : text.substring(0, max);
  }

  static String errorText(Throwable e) {
    StringBuilder text = new StringBuilder();
    for (Throwable t : OutboxFailures.causes(e)) {
      if (text.length() >= MAX_ERROR_LENGTH) {
        break;
      }
      if (text.length() > 0) {
        text.append(" <- ");
      }
      text.append(t.getClass().getName());
      if (t.getMessage() != null) {
        text.append(": ").append(t.getMessage());
      }
    }
    return text.length() > MAX_ERROR_LENGTH ? text.substring(0, MAX_ERROR_LENGTH) : text.toString();
  }

  /** Configuration of an {@link OutboxRelay}; {@link #build()} validates and copies it. */
  public static final class Builder {
    private final SqlSessionFactory sessions;
    private final OutboxPublisher publisher;
    private String tableName = Outbox.DEFAULT_TABLE;
    private @Nullable Integer batchSize; // null: by the publisher
    private Duration pollInterval = DEFAULT_POLL_INTERVAL;
    private RetryPolicy retryPolicy = DEFAULT_RETRY_POLICY;
    private Duration statsInterval = DEFAULT_STATS_INTERVAL;
    private Duration closeTimeout = DEFAULT_CLOSE_TIMEOUT;
    private String name = "idem-outbox-relay";
    private Duration leaseDuration = DEFAULT_LEASE_DURATION;
    private Function<Throwable, @Nullable OutboxFailureKind> classifier = failure -> null;
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

    /**
     * Rows per batch (one claim), most rows per ordering key in it, and ordering keys visited per
     * claim; >= 1. Default {@value OutboxRelay#DEFAULT_PUBLISH_ALL_BATCH_SIZE} for a publisher
     * that overrides {@link OutboxPublisher#publishAll} (the brokers' publishers), else {@value
     * OutboxRelay#DEFAULT_BATCH_SIZE}.
     */
    public Builder batchSize(int value) {
      this.batchSize = value;
      return this;
    }

    /** Wait after a claim over every ordering key found nothing due, default {@link OutboxRelay#DEFAULT_POLL_INTERVAL}; > 0. */
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

    /**
     * How long a claimed batch is this relay's, default {@link OutboxRelay#DEFAULT_LEASE_DURATION};
     * > 0. Rows of a relay that died are claimable again after it; keep it above twice the
     * publisher's timeout for one publish (the relay starts no publish once half of the lease has
     * passed and leaves the batch's remaining rows due).
     */
    public Builder leaseDuration(Duration value) {
      this.leaseDuration = Objects.requireNonNull(value, "leaseDuration");
      return this;
    }

    /**
     * Classifies what a publisher of one's own throws, before the default ({@link
     * OutboxFailures#classify}), which is used when {@code value} returns {@code null}. Called on
     * the relay thread; must not throw (if it does, the failure counts as the row's).
     */
    public Builder failureClassifier(Function<Throwable, @Nullable OutboxFailureKind> value) {
      this.classifier = Objects.requireNonNull(value, "failureClassifier");
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
      if (batchSize != null) {
        Settings.atLeast("batchSize", batchSize, 1);
      }
      Settings.positive("pollInterval", pollInterval);
      Settings.positive("statsInterval", statsInterval);
      Settings.notNegative("closeTimeout", closeTimeout);
      Settings.positive("leaseDuration", leaseDuration);
      StartupChecks.requireTransactionFactory(sessions.getConfiguration());
      TableName table = TableName.of(tableName);
      if (createTableIfMissing) {
        Outbox.createTableIfMissing(sessions, table);
      }
      return new OutboxRelay(this);
    }
  }
}
