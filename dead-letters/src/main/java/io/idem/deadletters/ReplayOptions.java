package io.idem.deadletters;

/**
 * How {@link DeadLetterOperations#replay} replays. Immutable; {@link #defaults()} or {@link
 * #builder()}.
 *
 * @param dryRun report what would be replayed (and what refused), touch nothing
 * @param ratePerSecond at most this many republishes a second; 0 for no limit
 * @param maxReplays the loop guard: a dead letter whose message was replayed this many times
 *     already ({@link DeadLetter#replayCount()}) is refused unless {@code force}
 * @param force replay what the loop guard refuses, and dead letters whose key came from the broker
 *     message id (each replay would be a new key)
 * @param keep republish and keep the dead letter (a rehearsal: replaying it again later is a
 *     duplicate the store skips)
 */
public record ReplayOptions(boolean dryRun, double ratePerSecond, int maxReplays, boolean force, boolean keep) {

  /** Default {@link #ratePerSecond()}: {@value} republishes a second. */
  public static final double DEFAULT_RATE_PER_SECOND = 50;

  /** Default {@link #maxReplays()}: {@value}. */
  public static final int DEFAULT_MAX_REPLAYS = 3;

  public ReplayOptions {
    if (!(ratePerSecond >= 0) || Double.isInfinite(ratePerSecond)) {
      throw new IllegalArgumentException("ratePerSecond must be >= 0 (0: no limit), but was " + ratePerSecond);
    }
    if (maxReplays < 1) {
      throw new IllegalArgumentException("maxReplays must be >= 1, but was " + maxReplays);
    }
  }

  /** No dry run, {@value #DEFAULT_RATE_PER_SECOND}/s, {@value #DEFAULT_MAX_REPLAYS} replays, no force, no keep. */
  public static ReplayOptions defaults() {
    return builder().build();
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Builder of {@link ReplayOptions}. Not thread-safe. */
  public static final class Builder {
    private boolean dryRun;
    private double ratePerSecond = DEFAULT_RATE_PER_SECOND;
    private int maxReplays = DEFAULT_MAX_REPLAYS;
    private boolean force;
    private boolean keep;

    private Builder() {}

    public Builder dryRun(boolean value) {
      this.dryRun = value;
      return this;
    }

    /** Republishes a second, at most; 0 for no limit. Default {@value #DEFAULT_RATE_PER_SECOND}. */
    public Builder ratePerSecond(double value) {
      this.ratePerSecond = value;
      return this;
    }

    /** The loop guard's limit; default {@value #DEFAULT_MAX_REPLAYS}. */
    public Builder maxReplays(int value) {
      this.maxReplays = value;
      return this;
    }

    public Builder force(boolean value) {
      this.force = value;
      return this;
    }

    public Builder keep(boolean value) {
      this.keep = value;
      return this;
    }

    /** @throws IllegalArgumentException naming the setting and the value */
    public ReplayOptions build() {
      return new ReplayOptions(dryRun, ratePerSecond, maxReplays, force, keep);
    }
  }
}
