package io.idem.spring;

import io.idem.RetryPolicy;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Deliveries of {@link Idempotent} methods that Idem decided but could not settle with the broker
 * — a dead-letter destination that refuses the copy (a RabbitMQ dead-letter queue that does not
 * exist, a Kafka DLT that cannot be written) — and so must come back: each such delivery backs off
 * with the retry policy's delay before the container redelivers it (the {@code n}-th consecutive
 * failure of one delivery waits {@link RetryPolicy#backoff(int) backoff(n)}, growing to {@code
 * maxBackoff}), and is logged once per interval: a WARN with the cause at the first failure, then
 * one line (with the number of failures since) at doubling intervals from {@value
 * #FIRST_LOG_INTERVAL_SECONDS} s up to {@value #MAX_LOG_INTERVAL_MINUTES} min. Without it a
 * missing queue was redelivered hundreds of times a second, a stack trace each.
 *
 * <p>In memory, bounded ({@value #MAX_TRACKED} deliveries, then cleared). Thread-safe.
 */
final class UnsettledDeliveries {
  static final long FIRST_LOG_INTERVAL_SECONDS = 5;
  static final long MAX_LOG_INTERVAL_MINUTES = 10;
  static final int MAX_TRACKED = 10_000;
  private static final Logger LOG = LoggerFactory.getLogger(IdempotentListenerInterceptor.class);

  private final Map<String, State> states = new ConcurrentHashMap<>();

  /**
   * Records that settling {@code delivery} failed with {@code failure}, logs it if its interval is
   * due, and returns how long to wait before the container gets it back.
   */
  Duration failed(String delivery, RuntimeException failure, RetryPolicy policy) {
    if (states.size() >= MAX_TRACKED) {
      states.clear();
    }
    long now = System.nanoTime();
    State state = states.compute(delivery, (k, s) -> s == null ? new State(now) : s.next());
    Duration delay = policy.backoff(state.failures);
    if (state.failures == 1) {
      LOG.warn("could not settle {} with its broker; handed back, again in {} ms: {}", delivery,
          delay.toMillis(), failure.toString());
    } else if (now - state.nextLogNanos >= 0) {
      synchronized (state) {
        if (now - state.nextLogNanos >= 0) {
          LOG.warn("still could not settle {} with its broker ({} failures since {} s ago); again in"
              + " {} ms: {}", delivery, state.failures - state.loggedAt, 
              Duration.ofNanos(now - state.lastLogNanos).toSeconds(), delay.toMillis(), failure.toString());
          state.logged(now);
        }
      }
    }
    return delay;
  }

  /** {@code delivery} was settled after all (or given up by the container): forget it. */
  void settled(String delivery) {
    State state = states.remove(delivery);
    if (state != null && state.failures > 0) {
      LOG.info("settled {} after {} failed attempt(s) to settle it", delivery, state.failures);
    }
  }

  private static final class State {
    volatile int failures;
    volatile int loggedAt;
    volatile long lastLogNanos;
    volatile long nextLogNanos;
    volatile long interval = Duration.ofSeconds(FIRST_LOG_INTERVAL_SECONDS).toNanos();

    State(long now) {
      failures = 1;
      loggedAt = 1;
      lastLogNanos = now;
      nextLogNanos = now + interval;
    }

    State next() {
      failures++;
      return this;
    }

    void logged(long now) {
      loggedAt = failures;
      lastLogNanos = now;
      interval = Math.min(interval * 2, Duration.ofMinutes(MAX_LOG_INTERVAL_MINUTES).toNanos());
      nextLogNanos = now + interval;
    }
  }
}
