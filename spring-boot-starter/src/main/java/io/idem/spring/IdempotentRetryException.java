package io.idem.spring;

import io.idem.ProcessingOutcome;
import java.time.Duration;

/**
 * Thrown out of an {@link Idempotent} listener method so that its container gets the message back
 * unacknowledged: Idem rolled the transaction back and its retry policy wants another attempt, the
 * store was unavailable, PostgreSQL asked for a retry, the consumer is shutting down, or the
 * dead-letter destination did not take the copy. What was waited before it was thrown is in
 * {@link #waited()}; on Kafka, where Idem does not wait longer than {@code max.poll.interval.ms}
 * allows, {@link #remaining()} is the rest of the backoff, for which Idem's error handler pauses
 * the record's partition after seeking it back. Carries no stack trace: the failure was logged by
 * Idem. Only Idem creates it.
 */
public class IdempotentRetryException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final transient ProcessingOutcome outcome;
  private final Duration waited;
  private final Duration remaining;

  IdempotentRetryException(ProcessingOutcome outcome, String delivery, Duration waited, Duration remaining) {
    super("Idem: " + outcome + " for " + delivery + " (waited " + waited.toMillis() + " ms"
        + (remaining.isZero() ? "" : ", " + remaining.toMillis() + " ms to go") + "); redeliver",
        null, false, false);
    this.outcome = outcome;
    this.waited = waited;
    this.remaining = remaining;
  }

  /**
   * Why: {@link ProcessingOutcome#RETRY}, {@code RETRY_STORE_UNAVAILABLE}, {@code RETRY_TRANSACTION}
   * or {@code RELEASED}; {@code DEAD_LETTERED} or {@code CONFLICT} when the dead-letter copy could
   * not be stored.
   */
  public ProcessingOutcome outcome() {
    return outcome;
  }

  /** The backoff already waited on the listener thread. */
  public Duration waited() {
    return waited;
  }

  /** The backoff still to wait before the message is run again (Kafka only; zero elsewhere). */
  public Duration remaining() {
    return remaining;
  }

  /** The {@link IdempotentRetryException} in {@code failure}'s cause chain, or {@code null}. */
  static @org.jspecify.annotations.Nullable IdempotentRetryException find(Throwable failure) {
    java.util.Set<Throwable> seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
    for (Throwable t = failure; t != null && seen.add(t); t = t.getCause()) {
      if (t instanceof IdempotentRetryException retry) {
        return retry;
      }
    }
    return null;
  }
}
