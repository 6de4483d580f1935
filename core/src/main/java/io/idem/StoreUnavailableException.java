package io.idem;

import org.jspecify.annotations.Nullable;

/**
 * The processed-events store could not complete a transaction for a reason that is not the
 * message's fault: the database is unreachable, the connection broke, the pool timed out, or the
 * database asked for the transaction to be retried (PostgreSQL SQLSTATE {@code 40001}
 * serialization failure, {@code 40P01} deadlock).
 *
 * <p>The pipeline answers it with {@link ProcessingOutcome#RETRY} and never dead-letters for it:
 * a database outage must not move good messages to a dead-letter destination. Whether the
 * transaction committed is unknown when the failure hit the commit itself; the redelivery then
 * finds the marker (a duplicate) or not (processed again), so either way the effect exists once.
 */
public class StoreUnavailableException extends IdempotencyException {
  private static final long serialVersionUID = 1L;

  public StoreUnavailableException(String message, @Nullable Throwable cause) {
    super(message, cause);
  }
}
