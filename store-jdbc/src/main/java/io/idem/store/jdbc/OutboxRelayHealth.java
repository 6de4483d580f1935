package io.idem.store.jdbc;

import java.time.Instant;
import org.jspecify.annotations.Nullable;

/**
 * One {@link OutboxRelay}'s state at one moment, from memory only (no query): what a health
 * indicator shows. Immutable.
 *
 * @param running the relay thread is alive and has not been closed; {@code false} before {@link
 *     OutboxRelay#start()}, after {@link OutboxRelay#close()} and when the thread ended for any
 *     other reason (then {@code lastError} says why)
 * @param lastPublishAt when this relay last marked a published row sent; {@code null} before the
 *     first
 * @param lastCycleAt when the relay thread last completed a claim (empty or not): it keeps moving
 *     while the relay runs and can reach the database; {@code null} before the first
 * @param destinationUnavailableUntil while the destination is unavailable (a circuit breaker): the
 *     earliest time of the next attempt; {@code null} when it is not
 * @param consecutiveDatabaseFailures claims or marks that failed in a row (0 when the last one
 *     worked)
 * @param lastError the last failure the relay met (a publish, the database), as text; {@code null}
 *     when none
 * @param stats the counts the relay thread last read ({@link OutboxRelay#lastStats()})
 */
public record OutboxRelayHealth(
    boolean running,
    @Nullable Instant lastPublishAt,
    @Nullable Instant lastCycleAt,
    @Nullable Instant destinationUnavailableUntil,
    int consecutiveDatabaseFailures,
    @Nullable String lastError,
    OutboxStats stats) {

  /** {@code UP} only while running, with the database reachable and the destination available. */
  public String status() {
    if (!running) {
      return "DOWN";
    }
    return consecutiveDatabaseFailures > 0 || destinationUnavailableUntil != null ? "DEGRADED" : "UP";
  }
}
