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
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/** {@link EnvelopeFormat#snsNotification()}. */
public final class SnsEnvelope implements EnvelopeFormat {
  public static final SnsEnvelope INSTANCE = new SnsEnvelope();
  private static final String NAME = "SNS notification";
  /** Besides {@code "Type":"Notification"}, what every SNS notification carries. */
  private static final List<String> FIELDS = List.of("MessageId", "TopicArn", "Message", "Timestamp");
  private static final List<byte[]> NEEDLES = Stream.concat(Stream.of("Notification"), FIELDS.stream())
      .map(name -> EnvelopeJson.needle("\"" + name + "\"")).toList();

  private SnsEnvelope() {}

  /**
   * Recognized only with every field SNS puts in every notification, {@code "Type":"Notification"},
   * {@code MessageId}, {@code TopicArn}, {@code Message} and {@code Timestamp} (present, not JSON
   * null): a business JSON that has only some of them passes through untouched. Only a body that
   * has them all and is still broken (invalid JSON, a non-string field, bad attributes) is
   * rejected. Never inside a CloudEvent's {@code data}, which has a content type.
   */
  @Override
  public Unwrapping unwrap(InboundMessage message) {
    byte[] payload = message.payload();
    // most payloads are no SNS notification: byte scans before any parsing
    if (UnwrappedMessage.typed(message) || !EnvelopeJson.looksLikeObject(payload)) {
      return Unwrapping.notRecognized();
    }
    for (byte[] needle : NEEDLES) {
      if (!EnvelopeJson.contains(payload, needle)) {
        return Unwrapping.notRecognized();
      }
    }
    ObjectNode root;
    try {
      root = EnvelopeJson.parse(payload);
    } catch (BadJson e) {
      // the bytes name every defining field, but the JSON cannot say whether they are members
      return Unwrapping.rejected(NAME + " (payload names Type Notification, MessageId, TopicArn,"
          + " Message and Timestamp): " + e.getMessage());
    }
    JsonNode type = root.get("Type");
    if (type == null || !"Notification".equals(type.textValue())) {
      return Unwrapping.notRecognized();
    }
    for (String field : FIELDS) {
      JsonNode node = root.get(field);
      if (node == null || node.isNull()) {
        return Unwrapping.notRecognized();
      }
    }
    try {
      return Unwrapping.unwrapped(open(message, root), NAME);
    } catch (BadJson e) {
      return Unwrapping.rejected(NAME + ": " + e.getMessage());
    }
  }

  private static InboundMessage open(InboundMessage message, ObjectNode root) throws BadJson {
    String messageId = EnvelopeJson.text(root, "MessageId");
    if (messageId == null || messageId.isBlank()) { // present (unwrap checked), but blank
      throw new BadJson("no MessageId");
    }
    String topicArn = EnvelopeJson.text(root, "TopicArn");
    String body = EnvelopeJson.text(root, "Message");
    if (body == null) {
      throw new BadJson("no Message (SNS message " + messageId + ")");
    }
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
