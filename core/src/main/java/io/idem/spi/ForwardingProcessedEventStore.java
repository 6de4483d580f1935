package io.idem.spi;

import io.idem.IdempotencyKey;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A {@link ProcessedEventStore} that passes every call to another store: the base for a store
 * that changes one or two things around a real one (a transaction opened by a framework, injected
 * failures in tests) and must keep everything else — the dead-letter decisions, the attempt counts
 * that survive a process death — exactly as the store it wraps. A subclass overrides only what it
 * changes; an SPI method added later is forwarded here once, so no wrapper silently falls back to
 * an SPI default that keeps nothing (as one did for {@link #startAttempt}, which then counted no
 * process deaths).
 *
 * <p>{@link #openRun()} is the one method not forwarded: the SPI's default runs every
 * transaction of a run through this store's {@link #inTransaction}, so a subclass that changes
 * {@code inTransaction} keeps its behaviour inside runs. A subclass that leaves transactions alone
 * may override {@code openRun()} to return {@code delegate().openRun()} and keep the wrapped
 * store's runs (the next claim sent with the previous COMMIT).
 *
 * <p>Thread-safe when the wrapped store is (every {@link ProcessedEventStore} must be).
 *
 * @param <C> the transaction context, the wrapped store's
 */
public abstract class ForwardingProcessedEventStore<C> implements ProcessedEventStore<C> {
  private final ProcessedEventStore<C> delegate;

  /**
   * @param delegate the store every call goes to
   * @throws NullPointerException when {@code delegate} is null
   */
  protected ForwardingProcessedEventStore(ProcessedEventStore<C> delegate) {
    this.delegate = Objects.requireNonNull(delegate, "delegate");
  }

  /** The store every call goes to. */
  protected ProcessedEventStore<C> delegate() {
    return delegate;
  }

  @Override
  public <T> T inTransaction(TransactionWork<C, T> work) throws Exception {
    return delegate.inTransaction(work);
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
  public void confirmClaims(C transaction, List<IdempotencyKey> keys) {
    delegate.confirmClaims(transaction, keys);
  }

  @Override
  public boolean confirmsWithoutMarkers() {
    return delegate.confirmsWithoutMarkers();
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

  @Override
  public int purge(Instant processedBefore, int maxRows) {
    return delegate.purge(processedBefore, maxRows);
  }

  @Override
  public boolean isProcessed(IdempotencyKey key) {
    return delegate.isProcessed(key);
  }

  @Override
  public String toString() {
    return getClass().getSimpleName() + "[" + delegate + "]";
  }
}
