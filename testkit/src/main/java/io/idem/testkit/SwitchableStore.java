package io.idem.testkit;

import io.idem.IdempotencyKey;
import io.idem.StoreUnavailableException;
import io.idem.spi.ClaimResult;
import io.idem.spi.DeadLetterDecision;
import io.idem.spi.ProcessedEventStore;
import io.idem.spi.TransactionWork;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * A store that passes everything to another one, except for the failures a test switches on: a
 * database outage for the next {@code n} transactions ({@link StoreUnavailableException} before
 * the work runs, as when no connection can be opened), or a commit that fails after the work ran
 * (the transaction rolls back). For tests of what an adapter does around the store, on the real
 * database. Thread-safe.
 *
 * @param <C> the store's transaction context
 */
public final class SwitchableStore<C> implements ProcessedEventStore<C> {
  /** Thrown out of a transaction whose commit {@link #failNextCommits failed}. */
  public static final class FailedCommitException extends RuntimeException {
    FailedCommitException() {
      super("simulated COMMIT failure: the transaction rolled back");
    }
  }

  private final ProcessedEventStore<C> delegate;
  private final AtomicInteger outages = new AtomicInteger();
  private final AtomicInteger failedCommits = new AtomicInteger();
  private final AtomicInteger refused = new AtomicInteger();

  public SwitchableStore(ProcessedEventStore<C> delegate) {
    this.delegate = Objects.requireNonNull(delegate, "delegate");
  }

  /** The next {@code transactions} calls of {@link #inTransaction} throw {@link StoreUnavailableException}. */
  public void failNextTransactions(int transactions) {
    outages.set(transactions);
  }

  /** The next {@code transactions} transactions run their work, then roll back and throw {@link FailedCommitException}. */
  public void failNextCommits(int transactions) {
    failedCommits.set(transactions);
  }

  /** How many transactions were refused as an outage so far. */
  public int refusedTransactions() {
    return refused.get();
  }

  private static boolean takeOne(AtomicInteger counter) {
    return counter.getAndUpdate(n -> Math.max(0, n - 1)) > 0;
  }

  @Override
  public <T> T inTransaction(TransactionWork<C, T> work) throws Exception {
    if (takeOne(outages)) {
      refused.incrementAndGet();
      throw new StoreUnavailableException("simulated outage: the database cannot be reached", null);
    }
    return delegate.inTransaction(tx -> {
      T result = work.run(tx);
      if (takeOne(failedCommits)) {
        throw new FailedCommitException();
      }
      return result;
    });
  }

  @Override
  public ClaimResult claim(C transaction, IdempotencyKey key, byte[] payloadFingerprint) {
    return delegate.claim(transaction, key, payloadFingerprint);
  }

  @Override
  public List<ClaimResult> claimAll(C transaction, List<IdempotencyKey> keys, List<byte[]> payloadFingerprints) {
    return delegate.claimAll(transaction, keys, payloadFingerprints);
  }

  @Override
  public void confirmClaim(C transaction, IdempotencyKey key) {
    delegate.confirmClaim(transaction, key);
  }

  @Override
  public int purge(Instant processedBefore, int maxRows) {
    return delegate.purge(processedBefore, maxRows);
  }

  @Override
  public boolean isProcessed(IdempotencyKey key) {
    return delegate.isProcessed(key);
  }

  @Override
  public boolean recordDeadLetter(IdempotencyKey key, DeadLetterDecision decision) {
    return delegate.recordDeadLetter(key, decision);
  }

  @Override
  public @Nullable DeadLetterDecision deadLetterDecision(IdempotencyKey key) {
    return delegate.deadLetterDecision(key);
  }

  @Override
  public boolean releaseDeadLetter(IdempotencyKey key, @Nullable String brokerMessageId) {
    return delegate.releaseDeadLetter(key, brokerMessageId);
  }

  @Override
  public int startAttempt(IdempotencyKey key) {
    return delegate.startAttempt(key);
  }

  @Override
  public void clearAttempts(C transaction, IdempotencyKey key) {
    delegate.clearAttempts(transaction, key);
  }
}
