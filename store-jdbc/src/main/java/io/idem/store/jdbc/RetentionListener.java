package io.idem.store.jdbc;

import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * Hears what a {@link RetentionJob} does, for metrics and logs ({@link
 * MicrometerRetentionListener}). Called on the job's thread, one call at a time; a listener that
 * throws is logged and ignored. Every method does nothing by default.
 */
public interface RetentionListener {

  /** One batch committed: {@code deleted} markers (0 to the batch size) in {@code took}. */
  default void onBatch(int deleted, Duration took) {}

  /**
   * A pass ended: {@code deleted} markers in all; {@code yielded} when it stopped early because
   * another instance held the purge lock (that instance goes on with the rest).
   */
  default void onPass(long deleted, Duration took, boolean yielded) {}

  /** The age of the oldest marker left, {@code null} when the table is empty; after each pass. */
  default void onOldestMarker(@Nullable Duration age) {}

  /** A pass failed (the database could not be reached, …); the job tries again next interval. */
  default void onFailure(RuntimeException failure) {}
}
