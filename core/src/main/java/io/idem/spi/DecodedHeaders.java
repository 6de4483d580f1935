package io.idem.spi;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * A delivery's headers as {@link io.idem.InboundMessage#headers()} and {@link
 * io.idem.InboundMessage#undecodableHeaders()} expose them, built the same way by every adapter:
 * values decoded as strict UTF-8 ({@link Utf8#decodeStrict}), a value that is not well-formed
 * listed as undecodable (never replaced with U+FFFD), a {@code null} value skipped, and when a
 * name repeats the last value wins (Kafka allows repeated header keys; AMQP tables and JMS
 * properties do not repeat). Immutable once built; the builder is not thread-safe.
 *
 * @param text the decoded headers, in arrival order; unmodifiable
 * @param undecodable names whose value was not well-formed UTF-8 (or of a type the broker's
 *     adapter cannot turn into text); unmodifiable
 */
public record DecodedHeaders(Map<String, String> text, Set<String> undecodable) {
  private static final DecodedHeaders EMPTY = new DecodedHeaders(Map.of(), Set.of());

  public DecodedHeaders {
    Objects.requireNonNull(text, "text");
    Objects.requireNonNull(undecodable, "undecodable");
  }

  /** No headers. */
  public static DecodedHeaders empty() {
    return EMPTY;
  }

  /** Starts an empty set of headers. */
  public static Builder builder() {
    return new Builder();
  }

  /** Collects header values in arrival order. */
  public static final class Builder {
    private final Map<String, String> text = new LinkedHashMap<>();
    private final Set<String> undecodable = new LinkedHashSet<>();

    private Builder() {}

    /** A raw value: decoded as strict UTF-8; {@code null} skips the header (an earlier value too). */
    public Builder bytes(String name, byte @Nullable [] value) {
      Objects.requireNonNull(name, "name");
      if (value == null) {
        forget(name);
        return this;
      }
      String decoded = Utf8.decodeStrict(value);
      return decoded == null ? undecodable(name) : text(name, decoded);
    }

    /** A value the broker already delivered as text (an AMQP long string decoded, a JMS String). */
    public Builder text(String name, String value) {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(value, "value");
      forget(name);
      text.put(name, value);
      return this;
    }

    /** A value that cannot be read as text. */
    public Builder undecodable(String name) {
      Objects.requireNonNull(name, "name");
      forget(name);
      undecodable.add(name);
      return this;
    }

    private void forget(String name) {
      text.remove(name);
      undecodable.remove(name);
    }

    public DecodedHeaders build() {
      if (text.isEmpty() && undecodable.isEmpty()) {
        return EMPTY;
      }
      return new DecodedHeaders(
          Collections.unmodifiableMap(new LinkedHashMap<>(text)),
          undecodable.isEmpty() ? Set.of() : Collections.unmodifiableSet(new LinkedHashSet<>(undecodable)));
    }
  }
}
