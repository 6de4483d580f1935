package io.idem;

/**
 * What the pipeline did with one delivery, after the broker was told. Outcomes are return values;
 * only infrastructure failures are exceptions.
 *
 * <p>Four outcomes settle the delivery ({@link #isSettled()}): {@link #PROCESSED}, {@link
 * #DUPLICATE}, {@link #CONFLICT} and {@link #DEAD_LETTERED}. The other four hand it back to be
 * processed again ({@link #isRetry()}); they differ in who failed, and only {@link #RETRY} — the
 * handler's own failure — uses up one of the {@link RetryPolicy#maxAttempts()} (see {@link
 * #countsAsAttempt()} and docs/FAILURES.md):
 *
 * <table>
 *   <caption>Retry outcomes</caption>
 *   <tr><th>outcome</th><th>who failed</th><th>attempt counted</th><th>acknowledgement call</th></tr>
 *   <tr><td>{@link #RETRY}</td><td>the handler (or the database rejecting its work)</td><td>yes</td>
 *       <td>{@link io.idem.spi.Acknowledgement#retry retry(backoff)}</td></tr>
 *   <tr><td>{@link #RETRY_STORE_UNAVAILABLE}</td><td>the store's own connection to the
 *       database</td><td>no</td>
 *       <td>{@link io.idem.spi.Acknowledgement#retryWhenStoreAvailable retryWhenStoreAvailable}</td></tr>
 *   <tr><td>{@link #RETRY_TRANSACTION}</td><td>nobody: PostgreSQL asked for the transaction to be
 *       retried (40001, 40P01) or the claim waited too long behind another instance</td><td>no</td>
 *       <td>{@link io.idem.spi.Acknowledgement#retryWhenStoreAvailable retryWhenStoreAvailable}</td></tr>
 *   <tr><td>{@link #RELEASED}</td><td>nobody: the consumer is shutting down</td><td>no</td>
 *       <td>{@link io.idem.spi.Acknowledgement#release() release()}</td></tr>
 * </table>
 */
public enum ProcessingOutcome {
  /** New key: the handler ran and its writes committed with the marker; the message was acked. */
  PROCESSED,
  /** The key was already committed with the same payload: the handler did not run; acked. */
  DUPLICATE,
  /**
   * The key was already committed with a different payload fingerprint: the handler did not run,
   * the message was dead-lettered with the reason, and the event counted as a conflict.
   */
  CONFLICT,
  /**
   * The handler failed (it threw, or the database rejected its work); everything rolled back, the
   * attempt counted, and the message will be redelivered after the policy's backoff. Nothing was
   * acked.
   */
  RETRY,
  /**
   * The store's own connection could not reach the database (refused, broken with a fresh
   * connection failing too, pool timed out); everything rolled back and the message will be
   * processed again when the store is back. Not an attempt; nothing was acked.
   */
  RETRY_STORE_UNAVAILABLE,
  /**
   * PostgreSQL asked for the whole transaction to be retried (SQLSTATE 40001 serialization
   * failure, 40P01 deadlock) or the claim gave up waiting behind another instance's open
   * transaction on the same key (lock timeout); everything rolled back and the message will be
   * processed again at once or after a short backoff. Not an attempt; nothing was acked.
   */
  RETRY_TRANSACTION,
  /**
   * The consumer is shutting down and interrupted the work: everything rolled back and the
   * message was handed back to the broker unacknowledged; the thread's interrupt flag is set
   * again. Not an attempt.
   */
  RELEASED,
  /**
   * The message was sent to the dead-letter destination with a reason (no key, invalid key,
   * non-retryable failure, or past the maximum attempts); nothing was applied.
   */
  DEAD_LETTERED;

  /** True for the outcomes that removed the delivery from its source (acked or dead-lettered). */
  public boolean isSettled() {
    return this == PROCESSED || this == DUPLICATE || this == CONFLICT || this == DEAD_LETTERED;
  }

  /** True for the outcomes that hand the delivery back to be processed again. */
  public boolean isRetry() {
    return !isSettled();
  }

  /** True only for {@link #RETRY}: the handler ran and failed, so one attempt is used up. */
  public boolean countsAsAttempt() {
    return this == RETRY;
  }
}
