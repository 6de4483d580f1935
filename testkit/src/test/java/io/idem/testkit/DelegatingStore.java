package io.idem.testkit;

import io.idem.IdempotencyKey;
import io.idem.spi.ClaimResult;
import io.idem.spi.DeadLetterDecision;
import io.idem.spi.ProcessedEventStore;
import io.idem.spi.TransactionWork;
import java.time.Instant;
import org.jspecify.annotations.Nullable;

/** Passes everything to an in-memory store; tests override one method to inject a failure. */
class DelegatingStore implements ProcessedEventStore<InMemoryTransaction> {
  private final InMemoryProcessedEventStore delegate;

  DelegatingStore(InMemoryProcessedEventStore delegate) {
    this.delegate = delegate;
  }

  @Override
  public <T> T inTransaction(TransactionWork<InMemoryTransaction, T> work) throws Exception {
    return delegate.inTransaction(work);
  }

  @Override
  public ClaimResult claim(InMemoryTransaction tx, IdempotencyKey key, byte[] fingerprint) {
    return delegate.claim(tx, key, fingerprint);
  }

  @Override
  public java.util.List<ClaimResult> claimAll(
      InMemoryTransaction tx, java.util.List<IdempotencyKey> keys, java.util.List<byte[]> fingerprints) {
    return delegate.claimAll(tx, keys, fingerprints);
  }

  @Override
  public int purge(Instant before, int maxRows) {
    return delegate.purge(before, maxRows);
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
  public void clearAttempts(InMemoryTransaction tx, IdempotencyKey key) {
    delegate.clearAttempts(tx, key);
  }
}
