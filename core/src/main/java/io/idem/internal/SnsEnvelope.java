package io.idem.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.idem.EnvelopeFormat;
import io.idem.InboundMessage;
import io.idem.Unwrapping;
import io.idem.internal.EnvelopeJson.BadJson;
import io.idem.spi.Utf8;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Iterator;
import java.util.Map;

/** {@link EnvelopeFormat#snsNotification()}. */
public final class SnsEnvelope implements EnvelopeFormat {
  public static final SnsEnvelope INSTANCE = new SnsEnvelope();
  private static final String NAME = "SNS notification";
  private static final byte[] TOPIC_ARN = EnvelopeJson.needle("\"TopicArn\"");
  private static final byte[] NOTIFICATION = EnvelopeJson.needle("\"Notification\"");

  private SnsEnvelope() {}

  @Override
  public Unwrapping unwrap(InboundMessage message) {
    byte[] payload = message.payload();
    // most payloads are no SNS notification: two byte scans before any parsing
    if (!EnvelopeJson.looksLikeObject(payload) || !EnvelopeJson.contains(payload, TOPIC_ARN)
        || !EnvelopeJson.contains(payload, NOTIFICATION)) {
      return Unwrapping.notRecognized();
    }
    ObjectNode root;
    try {
      root = EnvelopeJson.parse(payload);
    } catch (BadJson e) {
      // the bytes name both defining fields, but the JSON cannot say whether they are members
      return Unwrapping.rejected(NAME + " (payload has \"Type\":\"Notification\" and \"TopicArn\"): "
          + e.getMessage());
    }
    JsonNode type = root.get("Type");
    if (type == null || !type.isTextual() || !type.textValue().equals("Notification")
        || !root.has("TopicArn")) {
      return Unwrapping.notRecognized();
    }
    try {
      return Unwrapping.unwrapped(open(message, root), NAME);
    } catch (BadJson e) {
      return Unwrapping.rejected(NAME + ": " + e.getMessage());
    }
  }

  private static InboundMessage open(InboundMessage message, ObjectNode root) throws BadJson {
    String messageId = EnvelopeJson.text(root, "MessageId");
    if (messageId == null || messageId.isBlank()) {
      throw new BadJson("no MessageId");
    }
    String topicArn = EnvelopeJson.text(root, "TopicArn");
    if (!root.has("Message") || root.get("Message").isNull()) {
      throw new BadJson("no Message (SNS message " + messageId + ")");
    }
    String body = EnvelopeJson.text(root, "Message");
    EnvelopeJson.Headers headers = EnvelopeJson.headersOf(message);
    JsonNode attributes = root.get("MessageAttributes");
    if (attributes != null && !attributes.isNull()) {
      if (!attributes.isObject()) {
        throw new BadJson("MessageAttributes is a JSON " + EnvelopeJson.type(attributes) + ", not an object");
      }
      for (Iterator<Map.Entry<String, JsonNode>> it = attributes.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> attribute = it.next();
        attribute(headers, attribute.getKey(), attribute.getValue());
      }
    }
    headers.put("sns-message-id", messageId)
        .put("sns-topic-arn", topicArn)
        .put("sns-timestamp", EnvelopeJson.text(root, "Timestamp"))
        .put("sns-subject", EnvelopeJson.text(root, "Subject"));
    return headers.message(message, body.getBytes(StandardCharsets.UTF_8));
  }

  /** One {@code {"Type":"String|Number|Binary|String.Array…","Value":"…"}} attribute. */
  private static void attribute(EnvelopeJson.Headers headers, String name, JsonNode attribute)
      throws BadJson {
    if (!(attribute instanceof ObjectNode object)) {
      throw new BadJson("MessageAttributes '" + name + "' is a JSON " + EnvelopeJson.type(attribute)
          + ", not an object with Type and Value");
    }
    String type = EnvelopeJson.text(object, "Type");
    String value = EnvelopeJson.text(object, "Value");
    if (type == null || value == null) {
      throw new BadJson("MessageAttributes '" + name + "' has no " + (type == null ? "Type" : "Value"));
    }
    if (!type.startsWith("Binary")) {
      headers.put(name, value);
      return;
    }
    byte[] bytes;
    try {
      bytes = Base64.getDecoder().decode(value);
    } catch (IllegalArgumentException e) {
      throw new BadJson("MessageAttributes '" + name + "' of Type " + type + " is not base64: " + e.getMessage());
    }
    String text = Utf8.decodeStrict(bytes);
    if (text == null) {
      headers.undecodable(name);
    } else {
      headers.put(name, text);
    }
  }

  @Override
  public String toString() {
    return "snsNotification()";
  }
}
