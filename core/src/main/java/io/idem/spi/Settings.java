package io.idem.spi;

import java.time.Duration;
import java.util.Objects;

/**
 * Validation for adapter and store configuration builders, so that every {@code build()} names the
 * setting and the value it rejects in the same words ({@code "prefetch must be in 1..65535, but was
 * 0"}). Each method returns its value, so a builder can check and assign in one line. Thread-safe;
 * every method throws {@link IllegalArgumentException} with such a message when the value is
 * outside the range, and {@link NullPointerException} naming the setting when it is {@code null}.
 */
public final class Settings {
  private Settings() {}

  /** {@code value} above zero: {@code "<setting> must be positive, but was PT0S"}. */
  public static Duration positive(String setting, Duration value) {
    Objects.requireNonNull(value, setting);
    if (value.isNegative() || value.isZero()) {
      throw new IllegalArgumentException(setting + " must be positive, but was " + value);
    }
    return value;
  }

  /** {@code value} zero or more: {@code "<setting> must not be negative, but was PT-1S"}. */
  public static Duration notNegative(String setting, Duration value) {
    Objects.requireNonNull(value, setting);
    if (value.isNegative()) {
      throw new IllegalArgumentException(setting + " must not be negative, but was " + value);
    }
    return value;
  }

  /** {@code value} at least {@code min}: {@code "<setting> must be >= 1, but was 0"}. */
  public static int atLeast(String setting, int value, int min) {
    if (value < min) {
      throw new IllegalArgumentException(setting + " must be >= " + min + ", but was " + value);
    }
    return value;
  }

  /**
   * {@code value} in {@code min..max}, both included: {@code "<setting> must be in 1..65535, but
   * was 0"}.
   */
  public static int inRange(String setting, int value, int min, int max) {
    if (value < min || value > max) {
      throw new IllegalArgumentException(
          setting + " must be in " + min + ".." + max + ", but was " + value);
    }
    return value;
  }

  /** {@code value} with a non-whitespace character: {@code "<setting> must not be blank, but was ' '"}. */
  public static String notBlank(String setting, String value) {
    Objects.requireNonNull(value, setting);
    if (value.isBlank()) {
      throw new IllegalArgumentException(setting + " must not be blank, but was '" + value + "'");
    }
    return value;
  }
}
