package io.idem;

import java.time.Duration;
import java.time.Instant;
import org.jspecify.annotations.Nullable;

/**
 * The pipeline's view of its store, for readiness probes and dashboards: how many transactions in
 * a row failed because the store could not reach the database ({@link
 * ProcessingOutcome#RETRY_STORE_UNAVAILABLE}), since when, and when a transaction last reached it.
 * Handler failures and transaction retries do not count as store failures: the database answered.
 *
 * @param consecutiveFailures store-unavailable transactions since the last one that reached the
 *     database; 0 when the store is healthy
 * @param outageSince when the first of those failures happened, or {@code null} when healthy
 * @param lastSuccess when a transaction last reached the database, or {@code null} if none has yet
 */
public record StoreHealth(
    int consecutiveFailures, @Nullable Instant outageSince, @Nullable Instant lastSuccess) {

  /** True when the last transaction reached the database (or none has run yet). */
  public boolean isAvailable() {
    return consecutiveFailures == 0;
  }

  /** How long the current outage has lasted at {@code now}; {@link Duration#ZERO} when healthy. */
  public Duration outageDuration(Instant now) {
    return outageSince == null ? Duration.ZERO : Duration.between(outageSince, now);
  }
}
