package io.idem.internal;

import io.idem.StoreHealth;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;

/**
 * Keeps a store outage visible: counts consecutive store-unavailable transactions, logs a WARN at
 * the first one and then at doubling intervals (5 s, 10 s, 20 s … capped at 10 min), and switches
 * to ERROR once the outage has lasted {@code errorAfter}, so that a failure wrongly taken for an
 * outage is seen in minutes. Thread-safe (one lock; called once per failed or recovered
 * transaction).
 */
final class OutageTracker {
  static final Duration FIRST_REPEAT = Duration.ofSeconds(5);
  static final Duration MAX_REPEAT = Duration.ofMinutes(10);

  private final Logger log;
  private final Duration errorAfter;
  private final Clock clock;
  private volatile int consecutiveFailures;
  private @Nullable Instant outageSince;
  private volatile @Nullable Instant lastSuccess;
  private @Nullable Instant nextReport;
  private Duration repeat = FIRST_REPEAT;

  OutageTracker(Logger log, Duration errorAfter, Clock clock) {
    this.log = log;
    this.errorAfter = errorAfter;
    this.clock = clock;
  }

  /** A transaction failed because the store could not reach the database. */
  void failed(String what, String cause) {
    String line;
    boolean error;
    int failures;
    Duration lasted;
    synchronized (this) {
      Instant now = clock.instant();
      failures = consecutiveFailures + 1;
      consecutiveFailures = failures;
      if (outageSince == null) {
        outageSince = now;
        nextReport = now;
        repeat = FIRST_REPEAT;
      }
      lasted = Duration.between(outageSince, now);
      if (nextReport != null && now.isBefore(nextReport)) {
        line = null;
        error = false;
      } else {
        error = lasted.compareTo(errorAfter) >= 0;
        nextReport = now.plus(repeat);
        repeat = repeat.multipliedBy(2).compareTo(MAX_REPEAT) > 0 ? MAX_REPEAT : repeat.multipliedBy(2);
        line = what;
      }
    }
    if (line == null) {
      log.debug("store unavailable ({} consecutive failed transactions): {}: {}", failures, what, cause);
    } else if (error) {
      log.error("store unavailable for {} s ({} consecutive failed transactions, past the {} s"
              + " threshold); {}: {}", lasted.toSeconds(), failures, errorAfter.toSeconds(), line, cause);
    } else {
      log.warn("store unavailable ({} consecutive failed transaction(s), {} s so far); {}: {}",
          failures, lasted.toSeconds(), line, cause);
    }
  }

  /** A transaction reached the database (whatever its outcome). */
  void reached() {
    Instant now = clock.instant();
    lastSuccess = now;
    if (consecutiveFailures == 0) {
      return; // the hot path takes no lock
    }
    int failures;
    Duration lasted;
    synchronized (this) {
      failures = consecutiveFailures;
      if (failures == 0) {
        return;
      }
      lasted = Duration.between(outageSince, now);
      consecutiveFailures = 0;
      outageSince = null;
      nextReport = null;
    }
    log.info("store available again after {} failed transaction(s) over {} s", failures, lasted.toSeconds());
  }

  synchronized StoreHealth health() {
    return new StoreHealth(consecutiveFailures, outageSince, lastSuccess);
  }
}
