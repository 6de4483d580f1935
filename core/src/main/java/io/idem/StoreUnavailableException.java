package io.idem;

import org.jspecify.annotations.Nullable;

/**
 * The processed-events store's own connection could not reach the database: a connection could
 * not be opened (refused, the pool timed out), or the store's connection broke and a fresh one
 * could not be had either. Not the message's fault.
 *
 * <p>The store decides this from its own connection — never by walking a cause chain for socket
 * exceptions, and never from what the handler's statements or calls raised (a handler whose HTTP
 * call was refused, or whose statement the database rejected, failed on its own: its attempt
 * counts). See docs/FAILURES.md.
 *
 * <p>The pipeline answers it with {@link ProcessingOutcome#RETRY_STORE_UNAVAILABLE}: rolled back,
 * retried with backoff until the database is back, never counted as an attempt and never
 * dead-lettered, and kept visible (consecutive-failure count, WARN at doubling intervals, ERROR
 * past {@code IdempotentConsumer.Builder#outageErrorAfter}). When the failure hit the commit
 * itself, whether the transaction committed is unknown; the redelivery then finds the marker (a
 * duplicate) or not (processed again), so either way the effect exists once.
 */
public class StoreUnavailableException extends IdempotencyException {
  private static final long serialVersionUID = 1L;

  public StoreUnavailableException(String message, @Nullable Throwable cause) {
    super(message, cause);
  }
}
