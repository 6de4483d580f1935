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
 *     characters
 * @param value the key; 1 to {@value #MAX_LENGTH} characters, not blank, no NUL character
 *     (PostgreSQL text cannot hold U+0000) and no unpaired UTF-16 surrogate (it has no UTF-8
 *     encoding: the driver would replace it, and two different keys could become one)
 * @param source where {@code value} came from
 */
public record IdempotencyKey(String consumerGroup, String value, KeySource source) {

  /** Longest key value, in characters (the store's {@code varchar(512)} column). */
  public static final int MAX_LENGTH = 512;

  /** Longest consumer-group name, in characters (the store's {@code varchar(128)} column). */
  public static final int MAX_CONSUMER_GROUP_LENGTH = 128;

  /**
   * @throws IllegalArgumentException if a value is blank, too long or holds a NUL character
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
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c == '\0') {
        return "idempotency key must not contain the NUL character (U+0000)";
      }
      if (Character.isHighSurrogate(c) && i + 1 < value.length()
          && Character.isLowSurrogate(value.charAt(i + 1))) {
        i++; // a valid pair
      } else if (Character.isSurrogate(c)) {
        return "idempotency key must be valid Unicode, but has an unpaired surrogate U+"
            + Integer.toHexString(c).toUpperCase(Locale.ROOT) + " at index " + i;
      }
    }
    return null;
  }

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
    return null;
  }
}
