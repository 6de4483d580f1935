package io.idem.store.jdbc;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * Publishes a {@link RetentionJob}'s work to Micrometer. Needs {@code
 * io.micrometer:micrometer-core} on the classpath (an optional dependency of {@code
 * idem-store-jdbc}, as of {@code idem-core}). Attach it with {@code
 * RetentionJob.builder(store).listener(new MicrometerRetentionListener(registry, store.tableName()))}.
 * Thread-safe.
 *
 * <p>Meters, all tagged {@code table}:
 *
 * <ul>
 *   <li>{@code idem.retention.purged} (counter): markers deleted;
 *   <li>{@code idem.retention.batches} (timer): one per batch transaction, with its duration;
 *   <li>{@code idem.retention.failures} (counter): passes that failed;
 *   <li>{@code idem.retention.oldest.marker.age} (gauge, seconds): age of the oldest marker as
 *       the last pass left it, 0 on an empty table (NaN before the first pass). A value well above
 *       the retention window means the purge is not keeping up or not running.
 * </ul>
 */
public final class MicrometerRetentionListener implements RetentionListener {
  private final Counter purged;
  private final Counter failures;
  private final Timer batches;
  private final AtomicLong oldestMillis = new AtomicLong(-1);

  /**
   * @param registry where meters are registered
   * @param table the value of the {@code table} tag, e.g. {@code store.tableName()}
   */
  public MicrometerRetentionListener(MeterRegistry registry, String table) {
    Objects.requireNonNull(registry, "registry");
    Objects.requireNonNull(table, "table");
    this.purged = Counter.builder("idem.retention.purged")
        .description("Processed-events markers deleted by the retention job")
        .tag("table", table).register(registry);
    this.failures = Counter.builder("idem.retention.failures")
        .description("Retention passes that failed").tag("table", table).register(registry);
    this.batches = Timer.builder("idem.retention.batches")
        .description("Retention batch transactions").tag("table", table).register(registry);
    Gauge.builder("idem.retention.oldest.marker.age", oldestMillis,
            v -> v.get() < 0 ? Double.NaN : v.get() / 1000.0)
        .description("Age of the oldest processed-events marker, as the last pass left it")
        .baseUnit("seconds").tag("table", table).register(registry);
  }

  @Override
  public void onBatch(int deleted, Duration took) {
    purged.increment(deleted);
    batches.record(took);
  }

  @Override
  public void onOldestMarker(@Nullable Duration age) {
    oldestMillis.set(age == null ? 0 : Math.max(0, age.toMillis()));
  }

  @Override
  public void onFailure(RuntimeException failure) {
    failures.increment();
  }
}
