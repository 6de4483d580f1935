package io.idem.kafka;

import java.time.Duration;
import java.time.Instant;
import org.apache.kafka.clients.consumer.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * The connection facts of the health snapshot: when the last poll returned, whether it threw, and
 * how old the last coordinator heartbeat is (the client's {@code last-heartbeat-seconds-ago}
 * metric, sampled at most once a second). Written by the polling thread, read on any thread.
 */
final class PollHealth {
  private static final Duration HEARTBEAT_SAMPLE_INTERVAL = Duration.ofSeconds(1);

  private final Consumer<byte[], byte[]> consumer;
  private final KafkaConsumerConfig config;
  private final long startedNanos = System.nanoTime();
  /** The last poll threw; cleared by the next one that returns. */
  private volatile boolean pollFailed;
  private volatile long lastPollNanos;
  private volatile @Nullable Instant lastPollAt;
  /** Seconds since the last coordinator heartbeat was sent (-1: none yet), sampled after polls. */
  private volatile double heartbeatAgeSeconds = -1;
  private long heartbeatSampledNanos;

  PollHealth(Consumer<byte[], byte[]> consumer, KafkaConsumerConfig config) {
    this.consumer = consumer;
    this.config = config;
  }

  /** A poll threw. */
  void pollFailed() {
    pollFailed = true;
  }

  /** A poll returned; samples the heartbeat age at most once a second. Polling thread only. */
  void polled() {
    long now = System.nanoTime();
    pollFailed = false;
    lastPollNanos = now;
    lastPollAt = Instant.now();
    if (now - heartbeatSampledNanos >= HEARTBEAT_SAMPLE_INTERVAL.toNanos()) {
      heartbeatSampledNanos = now;
      try {
        heartbeatAgeSeconds = consumer.metrics().entrySet().stream()
            .filter(e -> e.getKey().name().equals("last-heartbeat-seconds-ago"))
            .map(e -> e.getValue().metricValue())
            .filter(Number.class::isInstance)
            .mapToDouble(v -> ((Number) v).doubleValue())
            .findFirst()
            .orElse(-1);
      } catch (RuntimeException e) {
        heartbeatAgeSeconds = -1; // a wrapped consumer without metrics: judge by polls alone
      }
    }
  }

  /**
   * Whether the consumer is connected as far as its client knows: the last poll returned without
   * an error within {@code max.poll.interval.ms} (beyond it the client leaves the group), and the
   * last coordinator heartbeat was sent within {@code session.timeout.ms} (beyond it the group
   * coordinator has dropped the member; a consumer that never sent one gets that long from its
   * start to join). Thread-safe.
   */
  boolean connected() {
    if (pollFailed || lastPollNanos == 0) {
      return false;
    }
    long now = System.nanoTime();
    if (now - lastPollNanos > config.maxPollInterval().toNanos()) {
      return false;
    }
    double session = config.sessionTimeout().toMillis() / 1000.0;
    double heartbeat = heartbeatAgeSeconds;
    if (heartbeat < 0 || heartbeat * 1e9 >= now - startedNanos) {
      return now - startedNanos <= config.sessionTimeout().toNanos(); // no heartbeat yet
    }
    return heartbeat <= session;
  }

  /** When the last poll returned without an error, or null. */
  @Nullable Instant lastPollAt() {
    return lastPollAt;
  }
}
