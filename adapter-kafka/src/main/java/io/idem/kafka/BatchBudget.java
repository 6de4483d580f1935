package io.idem.kafka;

/**
 * Sizes the batches of batch mode ({@link KafkaConsumerConfig#maxBatchSize()} above 1) to the time
 * left in the poll's budget (half of {@code max.poll.interval.ms}, {@link ConsumerLoop}), so that a
 * slow handler is not pushed out of the consumer group by a batch that outlasts the poll interval.
 *
 * <p>The rule: with no measurement yet, a batch of one record; else {@code
 * clamp(floor(min(timeLeft, shutdownTimeout) / (2 × perRecord)), 1, maxBatchSize)} (the shutdown
 * timeout so that {@code close()}, which lets the batch in flight finish, need not interrupt it). The factor 2 covers a batch that fails and is redone record
 * by record (its records run twice) and a handler slower than measured; a batch of one is never
 * refused, so a single record slower than the budget still runs (as in per-message mode).
 *
 * <p>{@code perRecord} is measured on completed runs ({@link #completed}: a run's time divided by
 * its records): a run slower per record than the estimate replaces it at once, a faster one moves
 * it a quarter of the way ({@value #FALL_WEIGHT}), so that batches shrink as soon as the handler
 * slows down and grow back over a few runs. One budget per consumer, shared by its partitions and
 * worker threads: thread-safe (every method synchronized: called once per run, not per record).
 * Times are nanoseconds as {@link System#nanoTime()} differences.
 */
final class BatchBudget {
  /** Weight of a sample below the estimate (a faster run): the estimate falls by this share of the gap. */
  static final double FALL_WEIGHT = 0.25;

  private final int maxBatchSize;
  /** The most time a batch is sized for, whatever the deadline leaves: {@link Long#MAX_VALUE}, or the shutdown timeout. */
  private final long longestNanos;
  /** The estimate in ns per record; 0 until the first run completed. Guarded by this. */
  private double nanosPerRecord;

  /** @param maxBatchSize the largest batch {@link #size} returns, at least 1 */
  BatchBudget(int maxBatchSize) {
    this(maxBatchSize, Long.MAX_VALUE);
  }

  /**
   * @param maxBatchSize the largest batch {@link #size} returns, at least 1
   * @param longestNanos the most time a batch is sized for even when the deadline leaves more, at
   *     least 1: the consumer's {@code shutdownTimeout}, so that {@code close()} can let the batch in
   *     flight finish (sized at twice the measured time per record, a batch is expected to take at
   *     most half of it)
   */
  BatchBudget(int maxBatchSize, long longestNanos) {
    if (maxBatchSize < 1) {
      throw new IllegalArgumentException("maxBatchSize must be >= 1, but was " + maxBatchSize);
    }
    if (longestNanos < 1) {
      throw new IllegalArgumentException("longestNanos must be >= 1, but was " + longestNanos);
    }
    this.maxBatchSize = maxBatchSize;
    this.longestNanos = longestNanos;
  }

  /**
   * How many records the next run takes when {@code nanosLeft} remain until the poll's deadline
   * (zero or negative: 1): between 1 and {@code maxBatchSize}, 1 while nothing was measured.
   */
  synchronized int size(long nanosLeft) {
    if (nanosPerRecord == 0 || nanosLeft <= 0) {
      return 1;
    }
    double fits = Math.floor(Math.min(nanosLeft, longestNanos) / (2 * nanosPerRecord));
    return (int) Math.max(1, Math.min(maxBatchSize, fits));
  }

  /**
   * Records that a run of {@code records} records (at least 1) took {@code nanos} from its start to
   * its settlement. Runs that did not settle every record are not to be recorded: their time
   * depends on where they stopped.
   */
  synchronized void completed(int records, long nanos) {
    if (records < 1) {
      throw new IllegalArgumentException("records must be >= 1, but was " + records);
    }
    double sample = Math.max(1, nanos) / (double) records; // at least 1 ns: 0 means "not measured"
    if (nanosPerRecord == 0 || sample >= nanosPerRecord) {
      nanosPerRecord = sample;
    } else {
      nanosPerRecord += FALL_WEIGHT * (sample - nanosPerRecord);
    }
  }

  /** The current estimate in ns per record, 0 before the first completed run. */
  synchronized double nanosPerRecord() {
    return nanosPerRecord;
  }
}
