package io.idem.internal;

import io.idem.IdempotencyKeyExtractor;
import io.idem.InboundMessage;
import io.idem.KeyExtraction;
import io.idem.KeySource;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;

/**
 * Reads CloudEvents {@code source} + {@code id} from binary-content-mode headers; a source that is
 * not a URI-reference (whitespace, control characters) is rejected rather than joined. Its reasons
 * name the headers as the broker spells them ({@link InboundMessage#describeHeader}).
 */
public final class CloudEventsKeyExtractor implements IdempotencyKeyExtractor {
  // Kafka and JMS bindings use "ce_", HTTP "ce-", the AMQP binding "cloudEvents:" or "cloudEvents_".
  private static final List<String> PREFIXES = List.of("ce_", "ce-", "cloudEvents:", "cloudEvents_");

  @Override
  public KeyExtraction extract(InboundMessage message) {
    for (String prefix : PREFIXES) {
      KeyExtraction id = HeaderKeyExtractor.read(message, prefix + "id", KeySource.CLOUDEVENTS);
      if (id instanceof KeyExtraction.Absent) {
        continue;
      }
      if (id instanceof KeyExtraction.Rejected) {
        return id;
      }
      KeyExtraction source =
          HeaderKeyExtractor.read(message, prefix + "source", KeySource.CLOUDEVENTS);
      if (source instanceof KeyExtraction.Absent) {
        return KeyExtraction.rejected(
            "CloudEvents " + message.describeHeader(prefix + "id") + " is present but "
                + message.describeHeader(prefix + "source") + " is not: an id is only unique within its source");
      }
      if (source instanceof KeyExtraction.Rejected) {
        return source;
      }
      String sourceValue = ((KeyExtraction.Found) source).value();
      String problem = problemWithSource(sourceValue);
      if (problem != null) {
        return KeyExtraction.rejected("CloudEvents " + message.describeHeader(prefix + "source") + " " + problem);
      }
      // the source has no space, so the first space of the key is this one: no two
      // (source, id) pairs make the same key
      String value = sourceValue + " " + ((KeyExtraction.Found) id).value();
      return KeyExtraction.found(
          value, KeySource.CLOUDEVENTS, "CloudEvents " + message.describeHeader(prefix + "source") + " + "
              + message.describeHeader(prefix + "id"));
    }
    // the bindings' spellings of the id, as this broker names them (a JMS property spells ce-id ce_id)
    return KeyExtraction.absent("no CloudEvents id (" + PREFIXES.stream().map(p -> message.describeHeader(p + "id"))
        .distinct().collect(Collectors.joining(", ")) + ")");
  }

  /**
   * A CloudEvents source is a URI-reference (CloudEvents 1.0, RFC 3986), which holds no unescaped
   * whitespace or control character; one that does could end where the id begins.
   */
  private static @Nullable String problemWithSource(String source) {
    for (int i = 0; i < source.length(); i++) {
      char c = source.charAt(i);
      if (Character.isWhitespace(c) || Character.isSpaceChar(c) || Character.isISOControl(c)) {
        return String.format(Locale.ROOT,
            "must be a URI-reference without whitespace or control characters, but has U+%04X at"
                + " index %d", (int) c, i);
      }
    }
    return null;
  }

  @Override
  public String toString() {
    return "cloudEvents()";
  }
}
