package io.idem.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.idem.EnvelopeFormat;
import io.idem.InboundMessage;
import io.idem.Unwrapping;
import io.idem.internal.EnvelopeJson.BadJson;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Iterator;
import java.util.Locale;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/** {@link EnvelopeFormat#cloudEventsStructured()}. */
public final class CloudEventsStructuredEnvelope implements EnvelopeFormat {
  public static final CloudEventsStructuredEnvelope INSTANCE = new CloudEventsStructuredEnvelope();
  static final String CONTENT_TYPE = "content-type";
  /** The JMS spelling (JMS property names cannot hold '-'). */
  private static final String JMS_CONTENT_TYPE = "content_type";
  private static final String STRUCTURED = "application/cloudevents+json";
  private static final String BATCH = "application/cloudevents-batch";
  private static final String ANY_FORMAT = "application/cloudevents";
  private static final String NAME = "CloudEvents structured mode";
  private static final byte[] SPECVERSION = EnvelopeJson.needle("\"specversion\"");
  /** The only released CloudEvents version, the one a by-shape candidate must name. */
  private static final String SPEC_VERSION = "1.0";

  private CloudEventsStructuredEnvelope() {}

  @Override
  public Unwrapping unwrap(InboundMessage message) {
    String contentType = EnvelopeJson.headerIgnoringCase(message, CONTENT_TYPE);
    if (contentType == null) {
      return byShape(message);
    }
    String[] parts = contentType.split(";");
    String mediaType = parts[0].trim().toLowerCase(Locale.ROOT);
    if (mediaType.startsWith(BATCH)) {
      return Unwrapping.rejected("CloudEvents batch mode (content type '" + contentType + "') carries"
          + " several events in one message, which cannot share one idempotency key and one"
          + " acknowledgement: publish one event per message (structured or binary mode)");
    }
    if (!mediaType.startsWith(ANY_FORMAT)) {
      return Unwrapping.notRecognized(); // binary mode or no CloudEvent at all
    }
    if (!mediaType.equals(STRUCTURED)) {
      return Unwrapping.rejected(NAME + ": content type '" + contentType + "' is an event format"
          + " Idem does not read (only " + STRUCTURED + ")");
    }
    for (int i = 1; i < parts.length; i++) {
      String[] parameter = parts[i].split("=", 2);
      if (parameter[0].trim().equalsIgnoreCase("charset") && parameter.length == 2) {
        String charset = parameter[1].trim().replace("\"", "");
        // US-ASCII is a subset of UTF-8: an ASCII event reads the same either way
        if (!charset.equalsIgnoreCase("utf-8") && !charset.equalsIgnoreCase("utf8")
            && !charset.equalsIgnoreCase("us-ascii")) {
          return Unwrapping.rejected(NAME + ": charset '" + charset + "' in content type '"
              + contentType + "'; the JSON event format is UTF-8 (US-ASCII accepted as its subset)");
        }
      }
    }
    try {
      return Unwrapping.unwrapped(open(message, EnvelopeJson.parse(message.payload())), NAME);
    } catch (BadJson e) {
      return Unwrapping.rejected(NAME + " (content type '" + contentType + "'): " + e.getMessage());
    }
  }

  /**
   * No content type (SQS, or a producer that set none): a JSON object shaped as a CloudEvent,
   * {@code specversion} exactly {@value #SPEC_VERSION} and string {@code id}, {@code source} and
   * {@code type}. Nothing claimed it was a CloudEvent, so a candidate that is not a valid one
   * (invalid JSON, an object-valued attribute, both {@code data} and {@code data_base64}…) is a
   * business payload and passes through unchanged. Never inside a CloudEvent's {@code data}:
   * that has a content type, {@code datacontenttype} or JSON by default.
   */
  private static Unwrapping byShape(InboundMessage message) {
    byte[] payload = message.payload();
    if (UnwrappedMessage.typed(message) || !EnvelopeJson.looksLikeObject(payload)
        || !EnvelopeJson.contains(payload, SPECVERSION)) {
      return Unwrapping.notRecognized();
    }
    try {
      ObjectNode root = EnvelopeJson.parse(payload);
      JsonNode specversion = root.get("specversion");
      if (specversion == null || !SPEC_VERSION.equals(specversion.textValue())) {
        return Unwrapping.notRecognized();
      }
      for (String required : new String[] {"id", "source", "type"}) {
        JsonNode node = root.get(required);
        if (node == null || !node.isTextual()) {
          return Unwrapping.notRecognized();
        }
      }
      return Unwrapping.unwrapped(open(message, root), NAME + " (by shape)");
    } catch (BadJson e) {
      return Unwrapping.notRecognized(); // no content type said it was a CloudEvent
    }
  }

  private static InboundMessage open(InboundMessage message, ObjectNode event) throws BadJson {
    for (String required : new String[] {"specversion", "id", "source"}) {
      if (EnvelopeJson.text(event, required) == null) {
        throw new BadJson("no '" + required + "' attribute");
      }
    }
    JsonNode data = event.get("data");
    JsonNode base64 = event.get("data_base64");
    if (data != null && base64 != null) {
      throw new BadJson("both 'data' and 'data_base64'; an event has one");
    }
    // the envelope's content type in both spellings (JMS exposes property content_type as both)
    EnvelopeJson.Headers headers = EnvelopeJson.headersOf(message).removeIgnoringCase(CONTENT_TYPE)
        .removeIgnoringCase(JMS_CONTENT_TYPE);
    for (Iterator<Map.Entry<String, JsonNode>> it = event.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> attribute = it.next();
      String name = attribute.getKey();
      JsonNode value = attribute.getValue();
      if (name.equals("data") || name.equals("data_base64") || value.isNull()) {
        continue;
      }
      String text = EnvelopeJson.scalarText(value);
      if (text == null) {
        throw new BadJson("attribute '" + name + "' is a JSON " + EnvelopeJson.type(value)
            + "; CloudEvents attributes are strings, numbers or booleans");
      }
      headers.put("ce_" + name, text);
    }
    String dataContentType = EnvelopeJson.text(event, "datacontenttype");
    headers.put(CONTENT_TYPE, dataContentType);
    return headers.typedMessage(message, payload(data, base64, dataContentType));
  }

  private static byte[] payload(@Nullable JsonNode data, @Nullable JsonNode base64,
      @Nullable String dataContentType) throws BadJson {
    if (base64 != null && !base64.isNull()) {
      if (!base64.isTextual()) {
        throw new BadJson("'data_base64' is a JSON " + EnvelopeJson.type(base64) + ", not a string");
      }
      try {
        return Base64.getDecoder().decode(base64.textValue());
      } catch (IllegalArgumentException e) {
        throw new BadJson("'data_base64' is not base64: " + e.getMessage());
      }
    }
    if (data == null || data.isNull()) {
      return new byte[0];
    }
    if (data.isTextual() && !isJson(dataContentType)) {
      return data.textValue().getBytes(StandardCharsets.UTF_8);
    }
    return EnvelopeJson.write(data);
  }

  /** CloudEvents JSON format 3.1: no datacontenttype means JSON; so do {@code +json} types. */
  private static boolean isJson(@Nullable String contentType) {
    if (contentType == null) {
      return true;
    }
    String media = contentType.split(";")[0].trim().toLowerCase(Locale.ROOT);
    return media.equals("application/json") || media.equals("text/json") || media.endsWith("+json");
  }

  @Override
  public String toString() {
    return "cloudEventsStructured()";
  }
}
