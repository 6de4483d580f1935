package io.idem.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.idem.EnvelopeFormat;
import io.idem.InboundMessage;
import io.idem.Unwrapping;
import io.idem.internal.EnvelopeJson.BadJson;

/** {@link EnvelopeFormat#eventBridge()}. */
public final class EventBridgeEnvelope implements EnvelopeFormat {
  public static final EventBridgeEnvelope INSTANCE = new EventBridgeEnvelope();
  private static final String NAME = "EventBridge event";
  private static final byte[] DETAIL_TYPE = EnvelopeJson.needle("\"detail-type\"");
  private static final String[] METADATA = {"id", "detail-type", "source", "time", "account", "region"};

  private EventBridgeEnvelope() {}

  @Override
  public Unwrapping unwrap(InboundMessage message) {
    byte[] payload = message.payload();
    if (!EnvelopeJson.looksLikeObject(payload) || !EnvelopeJson.contains(payload, DETAIL_TYPE)) {
      return Unwrapping.notRecognized();
    }
    ObjectNode root;
    try {
      root = EnvelopeJson.parse(payload);
    } catch (BadJson e) {
      return Unwrapping.rejected(NAME + " (payload names \"detail-type\"): " + e.getMessage());
    }
    if (!root.has("detail-type") || !root.has("source")) {
      return Unwrapping.notRecognized();
    }
    JsonNode detail = root.get("detail");
    if (detail == null || !detail.isObject()) {
      return Unwrapping.rejected(NAME + ": 'detail' is "
          + (detail == null ? "missing" : "a JSON " + EnvelopeJson.type(detail)) + ", not an object");
    }
    EnvelopeJson.Headers headers = EnvelopeJson.headersOf(message);
    for (String name : METADATA) {
      JsonNode value = root.get(name);
      headers.put("eventbridge-" + name, value == null ? null : EnvelopeJson.scalarText(value));
    }
    return Unwrapping.unwrapped(headers.message(message, EnvelopeJson.write(detail)), NAME);
  }

  @Override
  public String toString() {
    return "eventBridge()";
  }
}
