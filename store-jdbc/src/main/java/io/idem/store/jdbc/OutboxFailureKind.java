package io.idem.store.jdbc;

/**
 * Whose fault a failed publish is, which decides what the {@link OutboxRelay} charges.
 *
 * <ul>
 *   <li>{@link #DESTINATION_UNAVAILABLE}: the broker or API could not be reached or did not answer
 *       (connection refused or lost, a timeout, Kafka's broker or metadata not available). Every
 *       row would fail the same way, so the relay ends the batch at the first such failure, leaves
 *       that row and the rest due with no attempt charged, and backs itself off (a circuit breaker
 *       with its {@link io.idem.RetryPolicy}'s backoff);
 *   <li>{@link #ROW}: this row was refused (too large, not serializable, not authorized, not
 *       routable, anything else a publisher throws, an {@link Error} included): one attempt is
 *       charged to the row, which is retried after its backoff or parked; rows of other ordering
 *       keys go on.
 * </ul>
 */
public enum OutboxFailureKind {
  /** The destination is down or unreachable: not charged to any row. */
  DESTINATION_UNAVAILABLE,
  /** The row itself failed: charged to it as one attempt. */
  ROW
}
