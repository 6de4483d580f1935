package io.idem.testkit;

import io.idem.IdempotencyKey;
import io.idem.StoreUnavailableException;
import io.idem.spi.ClaimResult;
import io.idem.spi.DeadLetterDecision;
import io.idem.spi.ProcessedEventStore;
import io.idem.spi.TransactionWork;
import java.sql.SQLException;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * Plausible wrong {@link ProcessedEventStore}s, each with one {@link Fault}, and the kit classes
 * that run {@link ProcessedEventStoreCompatibilityKit} against them. Not run by the build on their
 * own (nested classes): {@link StoreKitRejectsWrongStoresTest} runs them through the JUnit
 * Platform and checks that the kit rejects each.
 *
 * <p>The transaction behaves as PostgreSQL's does where it matters: a failed statement aborts the
 * transaction (later statements fail with 25P02, and a commit of an aborted transaction rolls
 * back).
 */
final class FaultyStores {
  private FaultyStores() {}

  /** What the store gets wrong. */
  enum Fault {
    /** Nothing: the kit must pass (the self-test's own control). */
    NONE,
    /** Decides "duplicate" by catching the unique violation: on PostgreSQL that aborts the transaction. */
    CATCHES_UNIQUE_VIOLATION,
    /** Stores the first 255 characters of a key (a {@code varchar(255)} column that truncates). */
    TRUNCATES_KEYS,
    /** A key held by another open transaction is answered at once as a duplicate. */
    SKIPS_LOCK_WAIT,
    /** A key held by another open transaction is answered at once as claimed (a snapshot read). */
    CLAIMS_WITHOUT_WAITING,
    /** An unreachable database surfaces as a plain IllegalStateException, not as an outage. */
    OUTAGE_UNCLASSIFIED,
    /** Any SQLException of the work is reported as an outage. */
    WORK_FAILURE_AS_OUTAGE,
    /** No confirmClaim check and a commit of an aborted transaction reports success. */
    COMMITS_ABORTED_SILENTLY,
    /** Reports a dead-letter decision recorded but keeps none (a store written before the SPI had it). */
    FORGETS_DEAD_LETTERS,
    /** Writes a dead-letter decision over the marker of a processed key. */
    OVERWRITES_PROCESSED,
    /** Counts attempts in memory per call only: every start answers 1 (what a restart would see). */
    FORGETS_ATTEMPTS,
    /** Clears an attempt count at once, so a transaction that rolls back loses it too. */
    CLEARS_ATTEMPTS_ON_ROLLBACK,
    /** Keeps a key's attempt count when its dead-letter decision is recorded or released. */
    KEEPS_ATTEMPTS_OF_DEAD_LETTERS
  }

  /** The transaction context: the in-memory one plus PostgreSQL's "aborted" state. */
  static final class Tx {
    final InMemoryTransaction inner;
    final int id;
    boolean aborted;

    Tx(InMemoryTransaction inner, int id) {
      this.inner = inner;
      this.id = id;
    }

    /** A business statement: refused once the transaction is aborted. */
    void statement(Runnable onCommit) throws SQLException {
      if (aborted) {
        throw new SQLException("current transaction is aborted, commands ignored", "25P02");
      }
      inner.onCommit(onCommit);
    }

    /** A statement the database rejects: aborts the transaction. */
    void rejectedStatement() throws SQLException {
      aborted = true;
      throw new SQLException("duplicate key value violates unique constraint \"effects_pkey\"", "23505");
    }
  }

  /** A wrong store (or, with {@link Fault#NONE}, a right one) over the in-memory store. */
  static final class Store implements ProcessedEventStore<Tx> {
    private static final class SilentRollback extends RuntimeException {
      SilentRollback() {
        super(null, null, false, false);
      }
    }

    private final Fault fault;
    private final InMemoryProcessedEventStore delegate = new InMemoryProcessedEventStore();
    private final Map<String, Integer> heldBy = new ConcurrentHashMap<>();
    private final AtomicInteger ids = new AtomicInteger();

    Store(Fault fault, boolean available) {
      this.fault = fault;
      delegate.setAvailable(available);
    }

    @Override
    public <T> T inTransaction(TransactionWork<Tx, T> work) throws Exception {
      Object[] silentResult = new Object[1];
      int id = ids.incrementAndGet();
      try {
        return delegate.inTransaction(inner -> {
          Tx tx = new Tx(inner, id);
          T result;
          try {
            result = work.run(tx);
          } catch (SQLException e) {
            if (fault == Fault.WORK_FAILURE_AS_OUTAGE) {
              throw new StoreUnavailableException("database error: " + e.getMessage(), e);
            }
            throw e;
          }
          if (tx.aborted) {
            if (fault == Fault.COMMITS_ABORTED_SILENTLY) {
              silentResult[0] = result;
              throw new SilentRollback(); // rolled back, reported as committed
            }
            throw new SQLException("the transaction was aborted: rolled back", "25P02");
          }
          return result;
        });
      } catch (SilentRollback rolledBack) {
        @SuppressWarnings("unchecked")
        T result = (T) silentResult[0];
        return result;
      } catch (StoreUnavailableException e) {
        if (fault == Fault.OUTAGE_UNCLASSIFIED) {
          throw new IllegalStateException("Connection to 127.0.0.1:1 refused");
        }
        throw e;
      } finally {
        heldBy.values().removeIf(holder -> holder == id);
      }
    }

    private IdempotencyKey stored(IdempotencyKey key) {
      return fault == Fault.TRUNCATES_KEYS && key.value().length() > 255
          ? new IdempotencyKey(key.consumerGroup(), key.value().substring(0, 255), key.source())
          : key;
    }

    @Override
    public ClaimResult claim(Tx tx, IdempotencyKey key, byte[] payloadFingerprint) {
      String name = key.consumerGroup() + "\u0000" + key.value();
      Integer holder = heldBy.putIfAbsent(name, tx.id);
      if (holder != null && holder != tx.id) {
        if (fault == Fault.SKIPS_LOCK_WAIT) {
          return ClaimResult.DUPLICATE;
        }
        if (fault == Fault.CLAIMS_WITHOUT_WAITING) {
          return ClaimResult.CLAIMED;
        }
      }
      ClaimResult result = delegate.claim(tx.inner, stored(key), payloadFingerprint);
      if (result != ClaimResult.CLAIMED && fault == Fault.CATCHES_UNIQUE_VIOLATION) {
        tx.aborted = true; // the INSERT failed with 23505, caught: the transaction is aborted
      }
      return result;
    }

    @Override
    public void confirmClaim(Tx tx, IdempotencyKey key) {
      if (tx.aborted && fault != Fault.COMMITS_ABORTED_SILENTLY) {
        throw new IllegalStateException("the transaction holding the claim of " + key.value() + " is aborted");
      }
    }

    @Override
    public int purge(Instant processedBefore, int maxRows) {
      return unclassified(() -> delegate.purge(processedBefore, maxRows));
    }

    @Override
    public boolean isProcessed(IdempotencyKey key) {
      return unclassified(() -> delegate.isProcessed(stored(key)));
    }

    @Override
    public boolean recordDeadLetter(IdempotencyKey key, DeadLetterDecision decision) {
      if (fault == Fault.FORGETS_DEAD_LETTERS) {
        return unclassified(() -> !delegate.isProcessed(key)); // says recorded, keeps nothing
      }
      if (fault == Fault.OVERWRITES_PROCESSED && delegate.isProcessed(stored(key))) {
        delegate.purge(Instant.MAX, Integer.MAX_VALUE); // the processed marker goes
      }
      int before = delegate.attempts(stored(key));
      boolean recorded = unclassified(() -> delegate.recordDeadLetter(stored(key), decision));
      keepAttempts(key, before);
      return recorded;
    }

    /** With {@link Fault#KEEPS_ATTEMPTS_OF_DEAD_LETTERS}, puts {@code count} back. */
    private void keepAttempts(IdempotencyKey key, int count) {
      if (fault == Fault.KEEPS_ATTEMPTS_OF_DEAD_LETTERS) {
        while (delegate.attempts(stored(key)) < count) {
          delegate.startAttempt(stored(key));
        }
      }
    }

    @Override
    public int startAttempt(IdempotencyKey key) {
      if (fault == Fault.FORGETS_ATTEMPTS) {
        return unclassified(() -> {
          delegate.isProcessed(key); // reaches the store, counts nothing
          return 1;
        });
      }
      return unclassified(() -> delegate.startAttempt(stored(key)));
    }

    @Override
    public void clearAttempts(Tx transaction, IdempotencyKey key) {
      if (fault == Fault.CLEARS_ATTEMPTS_ON_ROLLBACK) {
        try {
          delegate.inTransaction(other -> {
            delegate.clearAttempts(other, stored(key));
            return null;
          });
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
        return;
      }
      delegate.clearAttempts(transaction.inner, stored(key));
    }

    @Override
    public @Nullable DeadLetterDecision deadLetterDecision(IdempotencyKey key) {
      return unclassified(() -> delegate.deadLetterDecision(stored(key)));
    }

    @Override
    public boolean releaseDeadLetter(IdempotencyKey key, @Nullable String brokerMessageId) {
      int before = delegate.attempts(stored(key));
      boolean released = unclassified(() -> delegate.releaseDeadLetter(stored(key), brokerMessageId));
      keepAttempts(key, before);
      return released;
    }

    private <T> T unclassified(java.util.function.Supplier<T> call) {
      try {
        return call.get();
      } catch (StoreUnavailableException e) {
        if (fault == Fault.OUTAGE_UNCLASSIFIED) {
          throw new IllegalStateException("Connection to 127.0.0.1:1 refused");
        }
        throw e;
      }
    }
  }

  /** The store kit against a store with {@code fault}. */
  abstract static class Kit extends ProcessedEventStoreCompatibilityKit<Tx> {
    private final Fault fault;
    private final Store store;
    private final Map<String, AtomicInteger> effects = new ConcurrentHashMap<>();

    Kit(Fault fault) {
      this.fault = fault;
      this.store = new Store(fault, true);
    }

    @Override
    protected Store store() {
      return store;
    }

    /** In memory a claim that waits is woken at once: a short window keeps the self-test fast. */
    @Override
    protected java.time.Duration claimWaitWindow() {
      return java.time.Duration.ofMillis(200);
    }

    @Override
    protected Store unreachableStore() {
      return new Store(fault, false);
    }

    @Override
    protected void recordEffect(Tx transaction, String key) throws SQLException {
      transaction.statement(() -> effects.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet());
    }

    @Override
    protected int effectCount(String key) {
      AtomicInteger count = effects.get(key);
      return count == null ? 0 : count.get();
    }

    @Override
    protected void failingStatement(Tx transaction) throws SQLException {
      transaction.rejectedStatement();
    }
  }

  static final class Correct extends Kit {
    Correct() {
      super(Fault.NONE);
    }
  }

  static final class CatchesUniqueViolation extends Kit {
    CatchesUniqueViolation() {
      super(Fault.CATCHES_UNIQUE_VIOLATION);
    }
  }

  static final class TruncatesKeys extends Kit {
    TruncatesKeys() {
      super(Fault.TRUNCATES_KEYS);
    }
  }

  static final class SkipsLockWait extends Kit {
    SkipsLockWait() {
      super(Fault.SKIPS_LOCK_WAIT);
    }
  }

  static final class ClaimsWithoutWaiting extends Kit {
    ClaimsWithoutWaiting() {
      super(Fault.CLAIMS_WITHOUT_WAITING);
    }
  }

  static final class OutageUnclassified extends Kit {
    OutageUnclassified() {
      super(Fault.OUTAGE_UNCLASSIFIED);
    }
  }

  static final class WorkFailureAsOutage extends Kit {
    WorkFailureAsOutage() {
      super(Fault.WORK_FAILURE_AS_OUTAGE);
    }
  }

  static final class ForgetsDeadLetters extends Kit {
    ForgetsDeadLetters() {
      super(Fault.FORGETS_DEAD_LETTERS);
    }
  }

  static final class OverwritesProcessed extends Kit {
    OverwritesProcessed() {
      super(Fault.OVERWRITES_PROCESSED);
    }
  }

  static final class ForgetsAttempts extends Kit {
    ForgetsAttempts() {
      super(Fault.FORGETS_ATTEMPTS);
    }
  }

  static final class ClearsAttemptsOnRollback extends Kit {
    ClearsAttemptsOnRollback() {
      super(Fault.CLEARS_ATTEMPTS_ON_ROLLBACK);
    }
  }

  static final class KeepsAttemptsOfDeadLetters extends Kit {
    KeepsAttemptsOfDeadLetters() {
      super(Fault.KEEPS_ATTEMPTS_OF_DEAD_LETTERS);
    }
  }

  static final class CommitsAbortedSilently extends Kit {
    CommitsAbortedSilently() {
      super(Fault.COMMITS_ABORTED_SILENTLY);
    }
  }
}
