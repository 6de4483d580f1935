package io.idem.benchmarks;

import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.TimeoutException;

/**
 * What a consumer under test has done: when its code saw the first record, when the last settled
 * record's transaction ended, how many records are settled, and (optionally) each settled
 * record's latency. Thread-safe; waiting is on the settled count (monitor), never on a sleep.
 */
final class Progress {
  private final long[] latencies;
  private long firstNanos;
  private long lastNanos;
  private long settled;
  /**
   * The count {@link #await} waits for: {@link #settled} wakes the waiter only when it is reached,
   * not once per record (a wake-up per record made the measured consumer thread fight the waiting
   * thread for this monitor on every record, CPU charged to the consumer under test).
   */
  private long awaited = Long.MAX_VALUE;

  /** @param keepLatencies how many per-record latencies to keep (0: none) */
  Progress(int keepLatencies) {
    this.latencies = new long[keepLatencies];
  }

  /** A record reached the consumer's code (only the first call counts). */
  synchronized void begin() {
    if (firstNanos == 0) {
      firstNanos = System.nanoTime();
    }
  }

  /** {@code records} records were settled, the last one {@code latencyNanos} after it reached the consumer. */
  synchronized void settled(int records, long latencyNanos) {
    if (settled < latencies.length) {
      latencies[(int) settled] = latencyNanos;
    }
    settled += records;
    lastNanos = System.nanoTime();
    if (settled >= awaited) {
      notifyAll();
    }
  }

  /** Waits until at least {@code records} are settled. */
  synchronized void await(long records, Duration timeout) throws InterruptedException, TimeoutException {
    long deadline = System.nanoTime() + timeout.toNanos();
    awaited = records;
    while (settled < records) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        throw new TimeoutException("only " + settled + " of " + records + " records settled after " + timeout);
      }
      wait(Math.max(1, left / 1_000_000));
    }
  }

  synchronized long settled() {
    return settled;
  }

  /** Records per second from the first record seen to the last one settled. */
  synchronized double eventsPerSecond() {
    return settled * 1e9 / Math.max(1, lastNanos - firstNanos);
  }

  synchronized long wallMillis() {
    return (lastNanos - firstNanos) / 1_000_000;
  }

  /** The {@code q} quantile (0..1) of the kept latencies, in milliseconds. */
  synchronized double latencyMillis(double q) {
    int n = (int) Math.min(settled, latencies.length);
    if (n == 0) {
      return Double.NaN;
    }
    long[] sorted = Arrays.copyOf(latencies, n);
    Arrays.sort(sorted);
    return sorted[Math.min(n - 1, (int) Math.ceil(q * n) - 1)] / 1e6;
  }
}
