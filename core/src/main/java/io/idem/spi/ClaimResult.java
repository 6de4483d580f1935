package io.idem.spi;

/** What {@link ProcessedEventStore#claim} found for a key. */
public enum ClaimResult {
  /** The marker was inserted by this transaction: the key is new, run the handler. */
  CLAIMED,
  /** A committed marker with the same payload fingerprint exists: skip and acknowledge. */
  DUPLICATE,
  /**
   * A committed marker with a different payload fingerprint exists — or a dead-letter marker
   * ({@link ProcessedEventStore#recordDeadLetter}), whatever the payload: skip and dead-letter.
   */
  CONFLICT
}
