package io.idem.testkit;

import io.idem.IdempotencyKey;
import io.idem.StoreUnavailableException;
import io.idem.spi.ClaimResult;
import io.idem.spi.DeadLetterDecision;
import io.idem.spi.ProcessedEventStore;
import io.idem.spi.TransactionWork;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.stream.IntStream;
import org.jspecify.annotations.Nullable;

/**
 * A {@link ProcessedEventStore} in memory, for unit tests of handlers and pipelines. It behaves
 * like the PostgreSQL store at READ COMMITTED: a claim of a key held by another open transaction
 * blocks until that transaction ends. Business writes join a transaction through
 * {@link InMemoryTransaction#onCommit(Runnable)}. Thread-safe. Nothing survives the JVM: use
 * {@code idem-store-jdbc} for anything but tests.
 */
public final class InMemoryProcessedEventStore implements ProcessedEventStore<InMemoryTransaction> {
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition released = lock.newCondition();
  private final Map<Key, Marker> committed = new HashMap<>();
  private final Map<Key, InMemoryTransaction> pending = new HashMap<>();
  /** Attempt counts ({@link #startAttempt}), with when each was last started. */
  private final Map<Key, Attempts> attempts = new HashMap<>();
  private final Clock clock;
  private volatile boolean available = true;

  public InMemoryProcessedEventStore() {
    this(Clock.systemUTC());
  }

  /** @param clock gives {@code processed_at} for new markers */
  public InMemoryProcessedEventStore(Clock clock) {
    this.clock = Objects.requireNonNull(clock, "clock");
  }

  private record Key(String group, String value) {}

  /**
   * Simulates a database outage (or its end), for tests of what a consumer does while the store is
   * away: while unavailable, {@link #inTransaction}, {@link #purge} and {@link #isProcessed} throw
   * {@link StoreUnavailableException} without running anything, as a store whose connection cannot
   * be opened does. Transactions already running are not affected. Default: available.
   */
  public void setAvailable(boolean available) {
    this.available = available;
  }

  private void checkAvailable() {
    if (!available) {
      throw new StoreUnavailableException("in-memory store set unavailable (simulated outage)", null);
    }
  }

  /** A processed message's marker, or (with a decision) a dead-letter marker. */
  private record Marker(byte[] fingerprint, Instant processedAt, @Nullable DeadLetterDecision decision) {}

  private record Attempts(int count, Instant lastStartedAt) {}

  @Override
  public <T> T inTransaction(TransactionWork<InMemoryTransaction, T> work) throws Exception {
    checkAvailable();
    InMemoryTransaction tx = new InMemoryTransaction();
    T result;
    try {
      result = work.run(tx);
    } catch (Throwable t) {
      end(tx, false);
      throw t;
    }
    end(tx, true);
    tx.runCommitActions();
    return result;
  }

  private void end(InMemoryTransaction tx, boolean commit) {
    lock.lock();
    try {
      for (Iterator<Map.Entry<Key, InMemoryTransaction>> it = pending.entrySet().iterator(); it.hasNext(); ) {
        Map.Entry<Key, InMemoryTransaction> entry = it.next();
        if (entry.getValue() == tx) {
          if (commit) {
            committed.put(entry.getKey(), new Marker(tx.fingerprintOf(entry.getKey()), clock.instant(), null));
          }
          it.remove();
        }
      }
      if (commit) {
        tx.clearedAttempts.forEach(attempts::remove);
      }
      tx.close();
      released.signalAll();
    } finally {
      lock.unlock();
    }
  }

  @Override
  public ClaimResult claim(InMemoryTransaction tx, IdempotencyKey key, byte[] payloadFingerprint) {
    Objects.requireNonNull(tx, "transaction");
    tx.checkOpen();
    lock.lock();
    try {
      return claimLocked(tx, new Key(key.consumerGroup(), key.value()), payloadFingerprint);
    } finally {
      lock.unlock();
    }
  }

  /**
   * Claims the keys as PostgreSQL's multi-row claim does: in (group, key) order, so that two
   * batches sharing keys never wait for each other in a cycle (this store has no deadlock
   * detection), each key held by another open transaction waited for in turn, the keys already
   * claimed staying held meanwhile; answers parallel to the input, a repeated key's later
   * occurrences compared with the marker its first occurrence left.
   */
  @Override
  public List<ClaimResult> claimAll(
      InMemoryTransaction tx, List<IdempotencyKey> keys, List<byte[]> payloadFingerprints) {
    Objects.requireNonNull(tx, "transaction");
    if (keys.size() != payloadFingerprints.size()) {
      throw new IllegalArgumentException("keys and payloadFingerprints must have the same size, but"
          + " had " + keys.size() + " and " + payloadFingerprints.size());
    }
    tx.checkOpen();
    Comparator<Integer> byKey = Comparator.comparing((Integer i) -> keys.get(i).consumerGroup())
        .thenComparing(i -> keys.get(i).value());
    List<Integer> order = IntStream.range(0, keys.size()).boxed().sorted(byKey).toList(); // stable
    ClaimResult[] results = new ClaimResult[keys.size()];
    lock.lock();
    try {
      for (int i : order) {
        IdempotencyKey key = keys.get(i);
        results[i] = claimLocked(tx, new Key(key.consumerGroup(), key.value()), payloadFingerprints.get(i));
      }
    } finally {
      lock.unlock();
    }
    return new ArrayList<>(Arrays.asList(results));
  }

  private ClaimResult claimLocked(InMemoryTransaction tx, Key k, byte[] payloadFingerprint) {
    while (pending.containsKey(k) && pending.get(k) != tx) {
      released.awaitUninterruptibly();
    }
    Marker marker = committed.get(k);
    if (marker != null) {
      return Arrays.equals(marker.fingerprint(), payloadFingerprint)
          ? ClaimResult.DUPLICATE
          : ClaimResult.CONFLICT;
    }
    if (pending.get(k) == tx) {
      return Arrays.equals(tx.fingerprintOf(k), payloadFingerprint)
          ? ClaimResult.DUPLICATE
          : ClaimResult.CONFLICT;
    }
    pending.put(k, tx);
    tx.remember(k, payloadFingerprint.clone());
    return ClaimResult.CLAIMED;
  }

  @Override
  public int purge(Instant processedBefore, int maxRows) {
    if (maxRows < 1) {
      throw new IllegalArgumentException("maxRows must be >= 1, but was " + maxRows);
    }
    checkAvailable();
    lock.lock();
    try {
      List<Key> doomed = new ArrayList<>();
      for (Map.Entry<Key, Marker> e : committed.entrySet()) {
        if (doomed.size() < maxRows && e.getValue().processedAt().isBefore(processedBefore)) {
          doomed.add(e.getKey());
        }
      }
      doomed.forEach(committed::remove);
      List<Key> counts = new ArrayList<>();
      for (Map.Entry<Key, Attempts> e : attempts.entrySet()) {
        if (counts.size() < maxRows && e.getValue().lastStartedAt().isBefore(processedBefore)) {
          counts.add(e.getKey());
        }
      }
      counts.forEach(attempts::remove);
      return Math.max(doomed.size(), counts.size());
    } finally {
      lock.unlock();
    }
  }

  @Override
  public boolean isProcessed(IdempotencyKey key) {
    checkAvailable();
    lock.lock();
    try {
      Marker marker = committed.get(new Key(key.consumerGroup(), key.value()));
      return marker != null && marker.decision() == null;
    } finally {
      lock.unlock();
    }
  }

  /** Written at once, as a store's own short transaction; waits for an open claim of the key. */
  @Override
  public boolean recordDeadLetter(IdempotencyKey key, DeadLetterDecision decision) {
    Objects.requireNonNull(decision, "decision");
    checkAvailable();
    Key k = new Key(key.consumerGroup(), key.value());
    lock.lock();
    try {
      while (pending.containsKey(k)) {
        released.awaitUninterruptibly();
      }
      Marker marker = committed.get(k);
      if (marker != null && marker.decision() == null) {
        return false; // processed meanwhile: never turned into a dead letter
      }
      committed.put(k, new Marker(DeadLetterDecision.markerFingerprint(), clock.instant(), decision));
      attempts.remove(k); // a replay starts with a fresh count
      return true;
    } finally {
      lock.unlock();
    }
  }

  @Override
  public @Nullable DeadLetterDecision deadLetterDecision(IdempotencyKey key) {
    checkAvailable();
    lock.lock();
    try {
      Marker marker = committed.get(new Key(key.consumerGroup(), key.value()));
      return marker == null ? null : marker.decision();
    } finally {
      lock.unlock();
    }
  }

  @Override
  public boolean releaseDeadLetter(IdempotencyKey key, @Nullable String brokerMessageId) {
    checkAvailable();
    Key k = new Key(key.consumerGroup(), key.value());
    lock.lock();
    try {
      Marker marker = committed.get(k);
      if (marker == null || marker.decision() == null
          || !Objects.equals(marker.decision().brokerMessageId(), brokerMessageId)) {
        return false;
      }
      committed.remove(k);
      attempts.remove(k);
      return true;
    } finally {
      lock.unlock();
    }
  }

  /** Counted at once, as a store's own short transaction. */
  @Override
  public int startAttempt(IdempotencyKey key) {
    checkAvailable();
    Key k = new Key(key.consumerGroup(), key.value());
    lock.lock();
    try {
      Attempts before = attempts.get(k);
      int count = before == null ? 1 : before.count() + 1;
      attempts.put(k, new Attempts(count, clock.instant()));
      return count;
    } finally {
      lock.unlock();
    }
  }

  /** Removed when {@code tx} commits. */
  @Override
  public void clearAttempts(InMemoryTransaction tx, IdempotencyKey key) {
    tx.checkOpen();
    checkAvailable();
    tx.clearedAttempts.add(new Key(key.consumerGroup(), key.value()));
  }

  /** The attempt count of {@code key}, {@code 0} when there is none. */
  public int attempts(IdempotencyKey key) {
    lock.lock();
    try {
      Attempts count = attempts.get(new Key(key.consumerGroup(), key.value()));
      return count == null ? 0 : count.count();
    } finally {
      lock.unlock();
    }
  }

  /** Number of committed markers. */
  public int size() {
    lock.lock();
    try {
      return committed.size();
    } finally {
      lock.unlock();
    }
  }
}
