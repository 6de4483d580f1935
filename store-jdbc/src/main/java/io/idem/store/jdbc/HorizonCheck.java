package io.idem.store.jdbc;

import io.idem.spi.RedeliveryHorizon;
import io.idem.spi.RedeliveryHorizon.Horizon;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The start-up check of a {@link RetentionJob}: the window must be strictly longer than every
 * source's redelivery horizon, and an unbounded horizon must have been accepted explicitly.
 */
final class HorizonCheck {
  private static final Logger LOG = LoggerFactory.getLogger(RetentionJob.class);

  private HorizonCheck() {}

  /**
   * Reads every horizon and refuses the window when it is not longer than a known one, or when one
   * is unbounded and {@code acceptReplays} is false.
   *
   * @return what was read, for the job's log line
   * @throws IllegalStateException naming the window, the horizon, the source and the fix
   */
  static List<Horizon> check(Duration window, List<RedeliveryHorizon> sources, boolean acceptReplays) {
    List<Horizon> read = new ArrayList<>(sources.size());
    for (RedeliveryHorizon source : sources) {
      Horizon horizon;
      try {
        horizon = source.read();
      } catch (RuntimeException e) {
        throw new IllegalStateException("the redelivery horizon could not be read (" + e
            + "); the retention window " + window + " is not checked against an unknown horizon:"
            + " make the broker reachable at start-up, or declare the horizon with"
            + " RedeliveryHorizon.declared(...)", e);
      }
      read.add(horizon);
      Duration bound = horizon.bound();
      if (bound == null) {
        if (!acceptReplays) {
          throw new IllegalStateException("the redelivery horizon of " + horizon.source()
              + " is unbounded (" + horizon.basis() + "): a message older than the retention window "
              + window + " can still be delivered again, and it would be applied again because"
              + " its marker is gone. Bound the source (e.g. a finite retention.ms), or set"
              + " acceptReplaysBeyondWindow(true) to accept that");
        }
        LOG.info("redelivery horizon of {} is unbounded ({}); accepted: a replay older than {} is"
            + " applied again", horizon.source(), horizon.basis(), window);
      } else if (window.compareTo(bound) <= 0) {
        // strictly longer: a marker purged at exactly the horizon races the source's last
        // redelivery (the purge's cutoff and the broker's deletion both round to their clocks)
        throw new IllegalStateException("retention window " + window + " is not longer than the"
            + " redelivery horizon " + bound + " of " + horizon.source() + " (" + horizon.basis()
            + "): a marker purged before the source's last redelivery lets that redelivery apply"
            + " its effect again. Set a retention longer than " + bound + ", e.g. retention("
            + longerThan(bound) + "), or shorten the source's horizon");
      }
    }
    return read;
  }

  /** A round window above {@code bound}: the next whole day, or the next whole minute below a day. */
  static Duration longerThan(Duration bound) {
    Duration unit = bound.compareTo(Duration.ofDays(1)) >= 0 ? Duration.ofDays(1) : Duration.ofMinutes(1);
    return unit.multipliedBy(bound.toNanos() / unit.toNanos() + 1);
  }
}
