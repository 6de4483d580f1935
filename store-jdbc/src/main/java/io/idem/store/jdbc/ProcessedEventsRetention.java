package io.idem.store.jdbc;

import io.idem.spi.ProcessedEventStore;
import io.idem.spi.Settings;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Deletes processed-events markers older than the retention window, in bounded batches, each its
 * own short transaction (so a purge never holds locks long or bloats one transaction).
 *
 * <p>A marker must outlive every redelivery of its message, or a late redelivery would be applied
 * again: the window is refused when it is shorter than the broker's redelivery horizon (Kafka:
 * topic retention of an uncommitted offset; SQS: the queue's message retention period; RabbitMQ
 * and JMS: the longest a message may sit unacked or in a retry loop).
 *
 * <p>Schedule {@link #purgeExpired()} yourself (for example hourly on a
 * {@code ScheduledExecutorService}); it is safe to run from several instances at once. Thread-safe.
 */
public final class ProcessedEventsRetention {
  private static final Logger LOG = LoggerFactory.getLogger(ProcessedEventsRetention.class);

  /** Default retention window: 15 days, as {@link RetentionJob#DEFAULT_RETENTION}. */
  public static final Duration DEFAULT_RETENTION = RetentionJob.DEFAULT_RETENTION;
  /** Default broker redelivery horizon: 4 days (the SQS default message retention). */
  public static final Duration DEFAULT_REDELIVERY_HORIZON = Duration.ofDays(4);
  /** Default rows per batch: {@value}. */
  public static final int DEFAULT_BATCH_SIZE = 1000;

  private final ProcessedEventStore<?> store;
  private final Duration retention;
  private final int batchSize;
  private final Clock clock;

  private ProcessedEventsRetention(Builder b) {
    this.store = b.store;
    this.retention = b.retention;
    this.batchSize = b.batchSize;
    this.clock = b.clock;
  }

  public static Builder builder(ProcessedEventStore<?> store) {
    return new Builder(store);
  }

  /**
   * Deletes every marker older than the window, batch by batch, until a batch comes back short.
   *
   * @return markers deleted
   * @throws io.idem.StoreUnavailableException when the database cannot be reached
   */
  public long purgeExpired() {
    Instant cutoff = clock.instant().minus(retention);
    long total = 0;
    int deleted;
    do {
      deleted = store.purge(cutoff, batchSize);
      total += deleted;
    } while (deleted == batchSize && !Thread.currentThread().isInterrupted());
    LOG.info("purged {} processed-events marker(s) older than {}", total, cutoff);
    return total;
  }

  public Duration retention() {
    return retention;
  }

  /** Builder; {@link #build()} validates. Not thread-safe. */
  public static final class Builder {
    private final ProcessedEventStore<?> store;
    private Duration retention = DEFAULT_RETENTION;
    private Duration redeliveryHorizon = DEFAULT_REDELIVERY_HORIZON;
    private int batchSize = DEFAULT_BATCH_SIZE;
    private Clock clock = Clock.systemUTC();

    private Builder(ProcessedEventStore<?> store) {
      this.store = Objects.requireNonNull(store, "store");
    }

    /** How long markers are kept; default 15 days. */
    public Builder retention(Duration value) {
      this.retention = Objects.requireNonNull(value, "retention");
      return this;
    }

    /** The longest a message can still be redelivered after first delivery; default 4 days. */
    public Builder redeliveryHorizon(Duration value) {
      this.redeliveryHorizon = Objects.requireNonNull(value, "redeliveryHorizon");
      return this;
    }

    /** Rows per batch transaction; default {@value ProcessedEventsRetention#DEFAULT_BATCH_SIZE}. */
    public Builder batchSize(int value) {
      this.batchSize = value;
      return this;
    }

    /** Where "now" comes from; default {@link Clock#systemUTC()} (tests move it). */
    public Builder clock(Clock value) {
      this.clock = Objects.requireNonNull(value, "clock");
      return this;
    }

    /** @throws IllegalArgumentException naming the setting when a value is out of range */
    public ProcessedEventsRetention build() {
      Settings.positive("retention", retention);
      if (redeliveryHorizon.isNegative()) {
        throw new IllegalArgumentException("redeliveryHorizon must not be negative, but was " + redeliveryHorizon);
      }
      if (retention.compareTo(redeliveryHorizon) <= 0) {
        throw new IllegalArgumentException(
            "retention must be longer than redeliveryHorizon (" + redeliveryHorizon + "), but was " + retention
                + ": a marker purged before the broker's last redelivery lets that redelivery apply"
                + " the effect again");
      }
      if (batchSize < 1) {
        throw new IllegalArgumentException("batchSize must be >= 1, but was " + batchSize);
      }
      return new ProcessedEventsRetention(this);
    }
  }
}
