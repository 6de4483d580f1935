package io.idem;

import org.jspecify.annotations.Nullable;

/**
 * The database asked for the whole transaction to be retried, or the claim could not take its
 * lock in time: nothing is wrong with the message and the store is reachable. PostgreSQL reports
 * SQLSTATE {@code 40001} (serialization failure, under REPEATABLE READ or SERIALIZABLE) and
 * {@code 40P01} (deadlock detected) with "retry the transaction" as the documented answer; a claim
 * that waited longer than the store's lock timeout behind another instance's open transaction on
 * the same key fails with {@code 55P03} (lock not available).
 *
 * <p>Thrown by {@link io.idem.spi.ProcessedEventStore#inTransaction} after the rollback. The
 * pipeline answers {@link ProcessingOutcome#RETRY_TRANSACTION}: retried at once or after a short
 * backoff, never counted as an attempt, never dead-lettered. A lock timeout raised by the
 * handler's own statements is not this exception: it is the handler's failure.
 */
public class TransactionRetryException extends IdempotencyException {
  private static final long serialVersionUID = 1L;

  public TransactionRetryException(String message, @Nullable Throwable cause) {
    super(message, cause);
  }
}
