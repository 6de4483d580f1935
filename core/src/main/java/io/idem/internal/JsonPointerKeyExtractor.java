package io.idem.internal;

import com.fasterxml.jackson.core.JsonPointer;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import io.idem.IdempotencyKeyExtractor;
import io.idem.InboundMessage;
import io.idem.KeyExtraction;
import io.idem.KeySource;
import java.io.IOException;
import java.util.Locale;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/** Reads a scalar field of a JSON payload. */
public final class JsonPointerKeyExtractor implements IdempotencyKeyExtractor {
  // Thread-safe once configured; one per JVM is enough. Numbers are kept exact (a double would
  // turn 1.0000000000000001 into 1.0 and merge two keys), and trailing garbage is an error.
  private static final ObjectMapper MAPPER = JsonMapper.builder()
      .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
      .enable(DeserializationFeature.USE_BIG_INTEGER_FOR_INTS)
      .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
      .nodeFactory(JsonNodeFactory.withExactBigDecimals(true))
      .build();

  private final JsonPointer pointer;

  public JsonPointerKeyExtractor(String pointer) {
    Objects.requireNonNull(pointer, "pointer");
    if (pointer.isEmpty()) {
      throw new IllegalArgumentException(
          "JSON Pointer must address a field (for example /orderId), but was ''");
    }
    try {
      this.pointer = JsonPointer.compile(pointer);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "JSON Pointer must follow RFC 6901 (start with '/'), but was '" + pointer + "'", e);
    }
  }

  @Override
  public KeyExtraction extract(InboundMessage message) {
    JsonNode root;
    try {
      root = MAPPER.readTree(message.payload());
    } catch (IOException e) {
      return KeyExtraction.rejected(
          "payload is not valid JSON, so JSON Pointer " + pointer + " cannot be read: "
              + firstLine(e.getMessage()));
    }
    if (root == null || root.isMissingNode()) {
      return KeyExtraction.rejected(
          "payload is empty, so JSON Pointer " + pointer + " cannot be read");
    }
    JsonNode node = root.at(pointer);
    if (node.isMissingNode() || node.isNull()) {
      return KeyExtraction.absent("no payload field " + pointer);
    }
    if (!node.isTextual() && !node.isNumber()) {
      return KeyExtraction.rejected(
          "payload field " + pointer + " is a JSON " + node.getNodeType().name().toLowerCase(Locale.ROOT)
              + ", not a string or number");
    }
    String value = node.isBigDecimal() ? node.decimalValue().toString() : node.asText();
    if (value.isBlank()) {
      return KeyExtraction.rejected("payload field " + pointer + " is present but blank");
    }
    return KeyExtraction.found(value, KeySource.PAYLOAD, "payload field " + pointer);
  }

  private static String firstLine(@Nullable String text) {
    if (text == null) {
      return "(no detail)";
    }
    int end = text.indexOf('\n');
    return end < 0 ? text : text.substring(0, end);
  }

  @Override
  public String toString() {
    return "jsonPointer(" + pointer + ")";
  }
}
