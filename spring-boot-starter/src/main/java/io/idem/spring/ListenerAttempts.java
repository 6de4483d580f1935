package io.idem.spring;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The attempt number of each delivery an {@link Idempotent} listener method sees: <strong>the one
 * place</strong> where the drop-in path decides it (docs/SPRING-BOOT.md, "Attempts").
 *
 * <p>An attempt is a run of the handler (docs/FAILURES.md, "Attempts are handler runs"): the
 * count goes up only when the pipeline answered {@code RETRY} — the method's body ran and failed.
 * A delivery handed back for anything else (the store unavailable, a transaction retry, a shutdown,
 * a dead-letter copy the destination refused, a Kafka record handed back to the container to wait
 * out a long backoff) comes back with the same attempt number, so a dead letter carries the number
 * of the run that was its last. Broker counters ({@code JMSXDeliveryCount}, {@code
 * x-delivery-count}, {@code ApproximateReceiveCount}) are not read: every hand-back above raises
 * them, and Artemis raises the count of prefetched messages on each {@code session.recover()} of
 * the one ahead of them.
 *
 * <p>Counted in memory, per consumer group and delivery ({@link ListenerDeliveries#deliveryId}):
 * a restart, or a redelivery to another instance, starts again at 1 — more attempts, never fewer.
 * Bounded: past {@value #MAX_TRACKED} deliveries in retry the counts are cleared (more attempts,
 * never fewer). A delivery it does not know that the broker says may have been delivered before
 * ({@link ListenerDeliveries#deliveredBefore}) is counted in the store instead, before its handler
 * runs ({@link io.idem.InboundMessage#unaccountedRedelivery()}): so a process death during the
 * handler counts as an attempt. Thread-safe.
 */
final class ListenerAttempts {
  /** Deliveries whose count is kept at most; cleared past it. */
  static final int MAX_TRACKED = 100_000;

  private final Map<String, Integer> failedRuns = new ConcurrentHashMap<>();

  /** The attempt the next run of {@code delivery} is: 1 plus the handler runs that failed before. */
  int next(String delivery) {
    return failedRuns.getOrDefault(delivery, 0) + 1;
  }

  /** The handler ran for {@code delivery} and failed: its next run is one attempt further. */
  void failed(String delivery) {
    if (failedRuns.size() >= MAX_TRACKED) {
      failedRuns.clear();
    }
    failedRuns.merge(delivery, 1, Integer::sum);
  }

  /**
   * {@code delivery} goes back to the container unsettled without a failed handler run (the store
   * unavailable, a transaction retry): known, so its redelivery is not counted in the store.
   */
  void handedBack(String delivery) {
    if (failedRuns.size() >= MAX_TRACKED) {
      failedRuns.clear();
    }
    failedRuns.putIfAbsent(delivery, 0);
  }

  /**
   * Whether this process saw {@code delivery} come back unsettled (failed or handed back): its
   * redelivery is then no unaccounted one (docs/FAILURES.md, "Attempts that survive the process").
   */
  boolean knows(String delivery) {
    return failedRuns.containsKey(delivery);
  }

  /** {@code delivery} was settled (processed, a duplicate, dead-lettered): forget it. */
  void settled(String delivery) {
    failedRuns.remove(delivery);
  }
}
