package io.idem;

/**
 * What the pipeline did with one delivery, after the broker was told (acked, retried or
 * dead-lettered). Outcomes are return values; only infrastructure failures are exceptions.
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
   * The transaction rolled back (handler failure or store unavailable) and the message will be
   * redelivered after a backoff; nothing was acked.
   */
  RETRY,
  /**
   * The message was sent to the dead-letter destination with a reason (no key, invalid key,
   * non-retryable failure, or past the maximum attempts); nothing was applied.
   */
  DEAD_LETTERED
}
