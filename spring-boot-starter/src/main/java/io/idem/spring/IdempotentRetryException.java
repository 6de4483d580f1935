package io.idem.spring;

import io.idem.ProcessingOutcome;
import java.time.Duration;

/**
 * Thrown out of an {@link Idempotent} listener method so that its container redelivers the
 * message: Idem rolled the transaction back and its retry policy wants another attempt (or the
 * store was unavailable, or PostgreSQL asked for a retry). The backoff was already waited on the
 * listener thread. Carries no stack trace: the handler's failure was logged by Idem.
 */
public final class IdempotentRetryException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final transient ProcessingOutcome outcome;

  IdempotentRetryException(ProcessingOutcome outcome, String delivery, Duration waited) {
    super("Idem: " + outcome + " for " + delivery + " (waited " + waited.toMillis()
        + " ms); redeliver", null, false, false);
    this.outcome = outcome;
  }

  /** Why: {@link ProcessingOutcome#RETRY}, {@code RETRY_STORE_UNAVAILABLE}, {@code RETRY_TRANSACTION} or {@code RELEASED}. */
  public ProcessingOutcome outcome() {
    return outcome;
  }
}
