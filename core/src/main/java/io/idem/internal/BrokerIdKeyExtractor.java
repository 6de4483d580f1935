package io.idem.internal;

import io.idem.IdempotencyKeyExtractor;
import io.idem.InboundMessage;
import io.idem.KeyExtraction;
import io.idem.KeySource;

/** Uses the broker's message id; the pipeline counts and logs every key found this way. */
public final class BrokerIdKeyExtractor implements IdempotencyKeyExtractor {

  @Override
  public KeyExtraction extract(InboundMessage message) {
    String id = message.brokerMessageId();
    if (id == null || id.isBlank()) {
      return KeyExtraction.absent("the broker gave no message id");
    }
    return KeyExtraction.found(id, KeySource.BROKER_ID, "broker message id (fallback)");
  }

  @Override
  public String toString() {
    return "brokerMessageId()";
  }
}
