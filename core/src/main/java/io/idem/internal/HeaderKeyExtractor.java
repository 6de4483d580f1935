package io.idem.internal;

import io.idem.IdempotencyKeyExtractor;
import io.idem.InboundMessage;
import io.idem.KeyExtraction;
import io.idem.KeySource;
import java.util.Objects;

/**
 * Reads a producer-set header. Its reasons name the header as the broker spells it ({@link
 * InboundMessage#describeHeader}: an SQS message attribute, a JMS property).
 */
public final class HeaderKeyExtractor implements IdempotencyKeyExtractor {
  private final String name;

  public HeaderKeyExtractor(String name) {
    Objects.requireNonNull(name, "name");
    if (name.isBlank()) {
      throw new IllegalArgumentException("header name must not be blank, but was '" + name + "'");
    }
    this.name = name;
  }

  @Override
  public KeyExtraction extract(InboundMessage message) {
    return read(message, name, KeySource.HEADER);
  }

  static KeyExtraction read(InboundMessage message, String name, KeySource source) {
    String described = message.describeHeader(name);
    if (message.undecodableHeaders().contains(name)) {
      return KeyExtraction.rejected(described + " is not valid UTF-8");
    }
    String value = message.header(name);
    if (value == null) {
      return KeyExtraction.absent("no " + described);
    }
    if (value.isBlank()) {
      return KeyExtraction.rejected(described + " is present but blank");
    }
    return KeyExtraction.found(value, source, described);
  }

  @Override
  public String toString() {
    return "header(" + name + ")";
  }
}
