package io.idem.internal;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.idem.InboundMessage;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/** JSON reading and header merging shared by the envelope formats. */
final class EnvelopeJson {
  // numbers exact (re-serialized data keeps its digits), trailing content and repeated member
  // names are errors: an envelope with two "Message" members has no one meaning
  private static final ObjectMapper MAPPER = JsonMapper.builder()
      .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
      .enable(DeserializationFeature.USE_BIG_INTEGER_FOR_INTS)
      .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
      .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
      .nodeFactory(JsonNodeFactory.withExactBigDecimals(true))
      .build();

  private EnvelopeJson() {}

  /** Thrown by {@link #parse} with a one-line reason. */
  static final class BadJson extends Exception {
    BadJson(String message) {
      super(message, null, false, false);
    }
  }

  /** The payload as a JSON object. */
  static ObjectNode parse(byte[] payload) throws BadJson {
    JsonNode root;
    try {
      root = MAPPER.readTree(payload);
    } catch (JsonProcessingException e) {
      // the message without Jackson's location suffix, which names no useful source here
      String detail = firstLine(e.getOriginalMessage());
      int location = detail.indexOf(" (start marker at [Source");
      throw new BadJson("invalid JSON: " + (location < 0 ? detail : detail.substring(0, location)));
    } catch (IOException e) {
      throw new BadJson("invalid JSON: " + firstLine(e.getMessage()));
    }
    if (root == null || root.isMissingNode()) {
      throw new BadJson("empty payload");
    }
    if (!(root instanceof ObjectNode object)) {
      throw new BadJson("a JSON " + root.getNodeType().name().toLowerCase(Locale.ROOT) + ", not an object");
    }
    return object;
  }

  /** {@code node} as compact JSON bytes. */
  static byte[] write(JsonNode node) {
    try {
      return MAPPER.writeValueAsBytes(node);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("a parsed JSON tree must serialize", e);
    }
  }

  /** Whether the first non-whitespace byte is '{'. */
  static boolean looksLikeObject(byte[] payload) {
    for (byte b : payload) {
      if (b == '{') {
        return true;
      }
      if (b != ' ' && b != '\t' && b != '\n' && b != '\r') {
        return false;
      }
    }
    return false;
  }

  /** {@code text} as the UTF-8 bytes {@link #contains} looks for; computed once per format. */
  static byte[] needle(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }

  /** Whether {@code payload} contains {@code needle}: a cheap filter before parsing. */
  static boolean contains(byte[] payload, byte[] needle) {
    outer:
    for (int i = 0; i + needle.length <= payload.length; i++) {
      for (int j = 0; j < needle.length; j++) {
        if (payload[i + j] != needle[j]) {
          continue outer;
        }
      }
      return true;
    }
    return false;
  }

  /** A string member, or {@code null} when absent or JSON null. */
  static @Nullable String text(ObjectNode object, String name) throws BadJson {
    JsonNode node = object.get(name);
    if (node == null || node.isNull()) {
      return null;
    }
    if (!node.isTextual()) {
      throw new BadJson("member '" + name + "' is a JSON " + type(node) + ", not a string");
    }
    return node.textValue();
  }

  /** A scalar as header text: a string as it is, a number with its exact digits, a boolean. */
  static @Nullable String scalarText(JsonNode node) {
    if (node.isTextual()) {
      return node.textValue();
    }
    if (node.isNumber()) {
      return node.isBigDecimal() ? node.decimalValue().toString() : node.asText();
    }
    if (node.isBoolean()) {
      return Boolean.toString(node.booleanValue());
    }
    return null;
  }

  static String type(JsonNode node) {
    return node.getNodeType().name().toLowerCase(Locale.ROOT);
  }

  /** The value of the header named {@code name} in any letter case, or {@code null}. */
  static @Nullable String headerIgnoringCase(InboundMessage message, String name) {
    String exact = message.header(name);
    if (exact != null) {
      return exact;
    }
    for (Map.Entry<String, String> header : message.headers().entrySet()) {
      if (header.getKey().equalsIgnoreCase(name)) {
        return header.getValue();
      }
    }
    return null;
  }

  /** The delivery's headers, to be extended by an envelope's; a later put replaces. */
  static Headers headersOf(InboundMessage message) {
    return new Headers(message);
  }

  /** Mutable header set of an unwrapped message; confined to one thread. */
  static final class Headers {
    private final Map<String, String> text;
    private final Set<String> undecodable;

    private Headers(InboundMessage message) {
      this.text = new LinkedHashMap<>(message.headers());
      this.undecodable = new LinkedHashSet<>(message.undecodableHeaders());
    }

    Headers put(String name, @Nullable String value) {
      if (value != null) {
        undecodable.remove(name);
        text.put(name, value);
      }
      return this;
    }

    Headers undecodable(String name) {
      text.remove(name);
      undecodable.add(name);
      return this;
    }

    /** Removes the header in every letter case. */
    Headers removeIgnoringCase(String name) {
      text.keySet().removeIf(name::equalsIgnoreCase);
      undecodable.removeIf(name::equalsIgnoreCase);
      return this;
    }

    InboundMessage message(InboundMessage delivery, byte[] payload) {
      return UnwrappedMessage.of(delivery, Map.copyOf(text), Set.copyOf(undecodable), payload);
    }

    /** The message of a payload whose content type its envelope implies (see {@link UnwrappedMessage}). */
    InboundMessage typedMessage(InboundMessage delivery, byte[] payload) {
      return new UnwrappedMessage(delivery, Map.copyOf(text), Set.copyOf(undecodable), payload, true);
    }
  }

  private static String firstLine(@Nullable String text) {
    if (text == null) {
      return "(no detail)";
    }
    int end = text.indexOf('\n');
    return end < 0 ? text : text.substring(0, end);
  }
}
