package io.idem;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;

/**
 * How often and how fast a failing message is retried before it is dead-lettered. Immutable and
 * thread-safe; build with {@link #builder()} or take {@link #ofDefaults()}.
 *
 * <p>The delay before attempt {@code n + 1} is {@code initialBackoff * multiplier^(n-1)}, capped
 * at {@code maxBackoff}, then spread by ±{@code jitter} (a share, 0.2 = ±20 %) so that messages
 * that failed together do not come back together.
 *
 * <p>Only handler failures ({@link ProcessingOutcome#RETRY}) count toward {@code maxAttempts}. A
 * {@link StoreUnavailableException} (the store cannot reach the database) is retried with the same
 * backoff, a {@link TransactionRetryException} (40001, 40P01, the claim's lock timeout) at once or
 * after a short delay, and neither ever dead-letters (docs/FAILURES.md) — except that a key whose
 * transaction is retried more than {@link #maxTransactionRetries()} times in a row counts the next
 * one as a handler failure (an attempt), so that a failure the database reports as "retry" on every
 * try cannot loop uncounted.
 */
public final class RetryPolicy {

  /** Default {@link #maxAttempts()}: {@value}. */
  public static final int DEFAULT_MAX_ATTEMPTS = 5;
  /** Default {@link #initialBackoff()}: 1 second. */
  public static final Duration DEFAULT_INITIAL_BACKOFF = Duration.ofSeconds(1);
  /** Default {@link #maxBackoff()}: 1 minute. */
  public static final Duration DEFAULT_MAX_BACKOFF = Duration.ofMinutes(1);
  /** Default {@link #multiplier()}: {@value}. */
  public static final double DEFAULT_MULTIPLIER = 2.0;
  /** Default {@link #jitter()}: {@value} (±20 %). */
  public static final double DEFAULT_JITTER = 0.2;
  /** Default {@link #maxTransactionRetries()}: {@value}. */
  public static final int DEFAULT_MAX_TRANSACTION_RETRIES = 10;

  /** The longest {@link #maxBackoff()} accepted: 1 day (no broker keeps a message waiting longer). */
  public static final Duration MAX_BACKOFF_LIMIT = Duration.ofDays(1);

  private static final RetryPolicy DEFAULTS = builder().build();

  private final int maxAttempts;
  private final Duration initialBackoff;
  private final Duration maxBackoff;
  private final double multiplier;
  private final double jitter;
  private final List<Class<? extends Throwable>> nonRetryable;
  private final boolean retryIntegrityViolations;
  private final int maxTransactionRetries;

  private RetryPolicy(Builder b) {
    this.maxTransactionRetries = b.maxTransactionRetries;
    this.retryIntegrityViolations = b.retryIntegrityViolations;
    this.maxAttempts = b.maxAttempts;
    this.initialBackoff = b.initialBackoff;
    this.maxBackoff = b.maxBackoff;
    this.multiplier = b.multiplier;
    this.jitter = b.jitter;
    this.nonRetryable = List.copyOf(b.nonRetryable);
  }

  /** 5 attempts, 1 s initial backoff doubling up to 1 min, ±20 % jitter. */
  public static RetryPolicy ofDefaults() {
    return DEFAULTS;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** A builder holding this policy's settings, to derive another policy from it. */
  public Builder toBuilder() {
    Builder b = new Builder()
        .maxAttempts(maxAttempts)
        .initialBackoff(initialBackoff)
        .maxBackoff(maxBackoff)
        .multiplier(multiplier)
        .jitter(jitter)
        .retryIntegrityViolations(retryIntegrityViolations)
        .maxTransactionRetries(maxTransactionRetries);
    nonRetryable.forEach(b::nonRetryable);
    return b;
  }

  /** Deliveries a message gets before it is dead-lettered, counting the first; at least 1. */
  public int maxAttempts() {
    return maxAttempts;
  }

  /**
   * Transaction retries ({@link TransactionRetryException}: 40001, 40P01, a claim's lock or
   * statement timeout on the store's own transaction) one key may get in a row without using an
   * attempt; the next one counts as a failed attempt (docs/FAILURES.md). Counted in memory per
   * pipeline; any other outcome of the key starts it again. At least 0.
   */
  public int maxTransactionRetries() {
    return maxTransactionRetries;
  }

  public Duration initialBackoff() {
    return initialBackoff;
  }

  public Duration maxBackoff() {
    return maxBackoff;
  }

  public double multiplier() {
    return multiplier;
  }

  public double jitter() {
    return jitter;
  }

  /**
   * The delay before the next delivery after {@code failedAttempt} failed, jitter applied.
   *
   * @param failedAttempt the 1-based attempt that failed; values below 1 count as 1
   */
  public Duration backoff(int failedAttempt) {
    int exponent = Math.max(0, failedAttempt - 1);
    double base = initialBackoff.toNanos() * Math.pow(multiplier, Math.min(exponent, 62));
    double capped = Math.min(base, maxBackoff.toNanos());
    double spread = jitter == 0 ? 0 : ThreadLocalRandom.current().nextDouble(-jitter, jitter);
    long nanos = (long) Math.max(0, Math.min(capped * (1 + spread), maxBackoff.toNanos()));
    return Duration.ofNanos(nanos);
  }

  /**
   * True unless {@code failure} is a {@link NonRetryableException}, a declared
   * {@link Builder#nonRetryable(Class) non-retryable} type, or — unless
   * {@link Builder#retryIntegrityViolations(boolean) retryIntegrityViolations(true)} — carries an
   * integrity-constraint violation (a {@link java.sql.SQLException} with SQLSTATE class {@code 23}
   * anywhere in its cause chain: unique, foreign key, check, not-null, exclusion; also a deferred
   * constraint failing at COMMIT), which the same message will hit again on every attempt.
   */
  public boolean isRetryable(Throwable failure) {
    if (failure instanceof NonRetryableException) {
      return false;
    }
    for (Class<? extends Throwable> type : nonRetryable) {
      if (type.isInstance(failure)) {
        return false;
      }
    }
    return retryIntegrityViolations || !isIntegrityViolation(failure);
  }

  /** True when {@code failure} or one of its causes is an SQLException of SQLSTATE class 23. */
  public static boolean isIntegrityViolation(Throwable failure) {
    java.util.Set<Throwable> seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
    for (Throwable t = failure; t != null && seen.add(t); t = t.getCause()) {
      if (t instanceof java.sql.SQLException sql) {
        String state = sql.getSQLState();
        if (state != null && state.startsWith("23")) {
          return true;
        }
      }
    }
    return false;
  }

  /** Whether integrity violations (SQLSTATE class 23) are retried; default {@code false}. */
  public boolean retryIntegrityViolations() {
    return retryIntegrityViolations;
  }

  /** True when a message that failed on {@code attempt} may be delivered again. */
  public boolean hasAttemptsLeft(int attempt) {
    return attempt < maxAttempts;
  }

  @Override
  public String toString() {
    return "RetryPolicy[maxAttempts=" + maxAttempts + ", initialBackoff=" + initialBackoff
        + ", maxBackoff=" + maxBackoff + ", multiplier=" + multiplier + ", jitter=" + jitter
        + ", maxTransactionRetries=" + maxTransactionRetries + ", nonRetryable=" + nonRetryable
        + (retryIntegrityViolations ? ", retryIntegrityViolations=true" : "") + "]";
  }

  /** Builder of {@link RetryPolicy}; {@link #build()} validates and copies. Not thread-safe. */
  public static final class Builder {
    private int maxAttempts = DEFAULT_MAX_ATTEMPTS;
    private Duration initialBackoff = DEFAULT_INITIAL_BACKOFF;
    private Duration maxBackoff = DEFAULT_MAX_BACKOFF;
    private double multiplier = DEFAULT_MULTIPLIER;
    private double jitter = DEFAULT_JITTER;
    private final List<Class<? extends Throwable>> nonRetryable = new ArrayList<>();
    private boolean retryIntegrityViolations;
    private int maxTransactionRetries = DEFAULT_MAX_TRANSACTION_RETRIES;

    private Builder() {}

    /**
     * Default {@value RetryPolicy#DEFAULT_MAX_TRANSACTION_RETRIES}: see {@link
     * RetryPolicy#maxTransactionRetries()}; 0 counts every transaction retry as an attempt.
     */
    public Builder maxTransactionRetries(int value) {
      this.maxTransactionRetries = value;
      return this;
    }

    /** Default {@value RetryPolicy#DEFAULT_MAX_ATTEMPTS}; 1 means "never retry". */
    public Builder maxAttempts(int value) {
      this.maxAttempts = value;
      return this;
    }

    /** Default 1 s. */
    public Builder initialBackoff(Duration value) {
      this.initialBackoff = Objects.requireNonNull(value, "initialBackoff");
      return this;
    }

    /** Default 1 min; at most {@link RetryPolicy#MAX_BACKOFF_LIMIT}. */
    public Builder maxBackoff(Duration value) {
      this.maxBackoff = Objects.requireNonNull(value, "maxBackoff");
      return this;
    }

    /** Default {@value RetryPolicy#DEFAULT_MULTIPLIER}; 1.0 gives a fixed delay. */
    public Builder multiplier(double value) {
      this.multiplier = value;
      return this;
    }

    /** Default {@value RetryPolicy#DEFAULT_JITTER}; 0 turns jitter off. */
    public Builder jitter(double value) {
      this.jitter = value;
      return this;
    }

    /** Handler exceptions of this type (or a subtype) dead-letter at once. */
    public Builder nonRetryable(Class<? extends Throwable> type) {
      this.nonRetryable.add(Objects.requireNonNull(type, "type"));
      return this;
    }

    /**
     * Default {@code false}: a handler failure carrying an integrity-constraint violation
     * (SQLSTATE class 23, including a deferred constraint failing at COMMIT) is dead-lettered at
     * once as non-retryable, since the same message violates the same constraint again.
     * {@code true} retries it like any other handler failure — for a foreign key whose parent row
     * may still arrive, say.
     */
    public Builder retryIntegrityViolations(boolean value) {
      this.retryIntegrityViolations = value;
      return this;
    }

    /**
     * @throws IllegalArgumentException naming the setting and its value when one is out of range
     */
    public RetryPolicy build() {
      if (maxAttempts < 1) {
        throw new IllegalArgumentException("maxAttempts must be >= 1, but was " + maxAttempts);
      }
      if (maxTransactionRetries < 0) {
        throw new IllegalArgumentException(
            "maxTransactionRetries must be >= 0, but was " + maxTransactionRetries);
      }
      if (initialBackoff.isNegative()) {
        throw new IllegalArgumentException(
            "initialBackoff must not be negative, but was " + initialBackoff);
      }
      if (maxBackoff.compareTo(MAX_BACKOFF_LIMIT) > 0) {
        throw new IllegalArgumentException(
            "maxBackoff must be at most " + MAX_BACKOFF_LIMIT + ", but was " + maxBackoff);
      }
      if (maxBackoff.compareTo(initialBackoff) < 0) {
        throw new IllegalArgumentException(
            "maxBackoff must be >= initialBackoff (" + initialBackoff + "), but was " + maxBackoff);
      }
      if (!(multiplier >= 1.0) || Double.isInfinite(multiplier)) {
        throw new IllegalArgumentException("multiplier must be >= 1.0, but was " + multiplier);
      }
      if (!(jitter >= 0.0 && jitter < 1.0)) {
        throw new IllegalArgumentException("jitter must be in [0, 1), but was " + jitter);
      }
      return new RetryPolicy(this);
    }
  }
}
