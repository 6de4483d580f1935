package io.idem;

/** Why a message was dead-lettered; the stable, machine-readable half of a {@link DeadLetterReason}. */
public enum DeadLetterCause {
  /** No extractor of the chain found a key, and no broker-id fallback was configured. */
  NO_KEY,
  /**
   * A key source was present but unusable: blank, too long, not UTF-8, malformed JSON; or the
   * message claims an envelope ({@link EnvelopeFormat}) that cannot be opened.
   */
  INVALID_KEY,
  /** The key was already processed with a different payload. */
  CONFLICT,
  /** The handler threw a non-retryable exception. */
  NON_RETRYABLE,
  /** The handler failed on every one of the retry policy's maximum attempts. */
  MAX_ATTEMPTS_EXCEEDED
}
