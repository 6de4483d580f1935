package io.idem.internal;

import io.idem.IdempotencyKeyExtractor;
import io.idem.InboundMessage;
import io.idem.KeyExtraction;
import io.idem.KeySource;
import java.util.List;

/** Reads CloudEvents {@code source} + {@code id} from binary-content-mode headers. */
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
            "CloudEvents header '" + prefix + "id' is present but '" + prefix + "source' is not:"
                + " an id is only unique within its source");
      }
      if (source instanceof KeyExtraction.Rejected) {
        return source;
      }
      String value = ((KeyExtraction.Found) source).value() + " " + ((KeyExtraction.Found) id).value();
      return KeyExtraction.found(
          value, KeySource.CLOUDEVENTS, "CloudEvents headers '" + prefix + "source'+'" + prefix + "id'");
    }
    return KeyExtraction.absent("no CloudEvents id header (ce_id, ce-id, cloudEvents:id)");
  }

  @Override
  public String toString() {
    return "cloudEvents()";
  }
}
