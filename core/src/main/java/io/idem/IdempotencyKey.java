package io.idem;

import java.util.Locale;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The identity of one business event for one consumer group: the processed-events primary key
 * is ({@code consumerGroup}, {@code value}).
 *
 * @param consumerGroup the logical consumer (a Kafka consumer group, or any name shared by all
 *     instances that must apply an event once); 1 to {@value #MAX_CONSUMER_GROUP_LENGTH}
 *     characters, not blank, no control character (NUL included) and no unpaired UTF-16 surrogate
 * @param value the key; 1 to {@value #MAX_LENGTH} characters, not blank, no NUL character
 *     (PostgreSQL text cannot hold U+0000) and no unpaired UTF-16 surrogate (it has no UTF-8
 *     encoding: the driver would replace it, and two different keys could become one)
 * @param source where {@code value} came from
 */
public record IdempotencyKey(String consumerGroup, String value, KeySource source) {

  /**
   * Longest key value, in Java {@code char}s (the store's {@code varchar(512)} column counts code
   * points, never more than {@code char}s, so a value within this limit always fits).
   */
  public static final int MAX_LENGTH = 512;

  /** Longest consumer-group name, in Java {@code char}s (the {@code varchar(128)} column). */
  public static final int MAX_CONSUMER_GROUP_LENGTH = 128;

  /**
   * @throws IllegalArgumentException if a value is blank or too long, or holds a character the
   *     store cannot keep apart (see the parameters)
   */
  public IdempotencyKey {
    Objects.requireNonNull(consumerGroup, "consumerGroup");
    Objects.requireNonNull(value, "value");
    Objects.requireNonNull(source, "source");
    String problem = problemWithConsumerGroup(consumerGroup);
    if (problem != null) {
      throw new IllegalArgumentException(problem);
    }
    problem = problemWith(value);
    if (problem != null) {
      throw new IllegalArgumentException(problem);
    }
  }

  /**
   * Says why {@code value} cannot be a key, or returns {@code null} when it can.
   *
   * @return a readable reason naming the rule broken, or {@code null}
   */
  public static @Nullable String problemWith(String value) {
    if (value.isBlank()) {
      return "idempotency key must not be blank, but was '" + value + "'";
    }
    if (value.length() > MAX_LENGTH) {
      return "idempotency key must be at most " + MAX_LENGTH + " characters, but was "
          + value.length();
    }
    return problemWithContent(value);
  }

  /**
   * Says why {@code value}'s characters cannot be stored, whatever its length: a NUL character or
   * an unpaired UTF-16 surrogate; {@code null} when they can.
   */
  public static @Nullable String problemWithContent(String value) {
    if (value.indexOf('\0') >= 0) {
      return "idempotency key must not contain the NUL character (U+0000)";
    }
    int unpaired = indexOfUnpairedSurrogate(value);
    if (unpaired >= 0) {
      return "idempotency key must be valid Unicode, but has an unpaired surrogate "
          + codePoint(value.charAt(unpaired)) + " at index " + unpaired;
    }
    return null;
  }

  /**
   * Says why {@code group} cannot name a consumer group, or returns {@code null} when it can: it
   * must not be blank nor longer than {@value #MAX_CONSUMER_GROUP_LENGTH} characters, and must hold
   * no control character (NUL included: PostgreSQL text cannot hold it) and no unpaired UTF-16
   * surrogate (the driver would replace it, and two groups could become one and skip each other's
   * events as duplicates).
   */
  static @Nullable String problemWithConsumerGroup(String group) {
    if (group.isBlank()) {
      return "consumerGroup must not be blank, but was '" + group + "'";
    }
    if (group.length() > MAX_CONSUMER_GROUP_LENGTH) {
      return "consumerGroup must be at most " + MAX_CONSUMER_GROUP_LENGTH
          + " characters, but was " + group.length();
    }
    if (group.indexOf('\0') >= 0) {
      return "consumerGroup must not contain the NUL character (U+0000)";
    }
    for (int i = 0; i < group.length(); i++) {
      if (Character.isISOControl(group.charAt(i))) {
        return "consumerGroup must not contain control characters, but has "
            + codePoint(group.charAt(i)) + " at index " + i;
      }
    }
    int unpaired = indexOfUnpairedSurrogate(group);
    if (unpaired >= 0) {
      return "consumerGroup must be valid Unicode, but has an unpaired surrogate "
          + codePoint(group.charAt(unpaired)) + " at index " + unpaired;
    }
    return null;
  }

  /** The index of the first surrogate that is not part of a high-low pair, or -1. */
  private static int indexOfUnpairedSurrogate(String value) {
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (Character.isHighSurrogate(c) && i + 1 < value.length()
          && Character.isLowSurrogate(value.charAt(i + 1))) {
        i++; // a valid pair
      } else if (Character.isSurrogate(c)) {
        return i;
      }
    }
    return -1;
  }

  private static String codePoint(char c) {
    return String.format(Locale.ROOT, "U+%04X", (int) c);
  }
}
