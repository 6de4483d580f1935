package io.idem;

import java.util.Objects;

/**
 * What an {@link IdempotencyKeyExtractor} found in one message: a key value, nothing, or a
 * reason the message cannot be keyed. An extraction result is a value, not an exception, so that
 * a chain can try the next extractor after {@link Absent} and stop at {@link Rejected}.
 */
public sealed interface KeyExtraction {

  /** A key value was found. */
  record Found(String value, KeySource source, String origin) implements KeyExtraction {
    /**
     * @param value the raw key value (length and content are checked later by the pipeline)
     * @param source where it came from
     * @param origin human-readable detail for logs, such as {@code header 'idempotency-key'}
     */
    public Found {
      Objects.requireNonNull(value, "value");
      Objects.requireNonNull(source, "source");
      Objects.requireNonNull(origin, "origin");
    }
  }

  /** This extractor's source is not present in the message; a chain tries the next one. */
  record Absent(String detail) implements KeyExtraction {
    public Absent {
      Objects.requireNonNull(detail, "detail");
    }
  }

  /**
   * The source is present but unusable (blank, not valid UTF-8, malformed JSON, not a scalar): the
   * chain stops, and the message is dead-lettered with this reason rather than keyed by a weaker
   * source.
   */
  record Rejected(String reason) implements KeyExtraction {
    public Rejected {
      Objects.requireNonNull(reason, "reason");
    }
  }

  static KeyExtraction found(String value, KeySource source, String origin) {
    return new Found(value, source, origin);
  }

  static KeyExtraction absent(String detail) {
    return new Absent(detail);
  }

  static KeyExtraction rejected(String reason) {
    return new Rejected(reason);
  }
}
