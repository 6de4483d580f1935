package io.idem.internal;

import com.fasterxml.jackson.core.JsonPointer;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.idem.IdempotencyKeyExtractor;
import io.idem.InboundMessage;
import io.idem.KeyExtraction;
import io.idem.KeySource;
import java.io.IOException;
import java.util.Objects;

/** Reads a scalar field of a JSON payload. */
public final class JsonPointerKeyExtractor implements IdempotencyKeyExtractor {
  // ObjectMapper is thread-safe once configured; one per JVM is enough.
  private static final ObjectMapper MAPPER = new ObjectMapper();

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
    if (!node.isValueNode()) {
      return KeyExtraction.rejected(
          "payload field " + pointer + " is a JSON " + node.getNodeType().name().toLowerCase()
              + ", not a string or number");
    }
    String value = node.asText();
    if (value.isBlank()) {
      return KeyExtraction.rejected("payload field " + pointer + " is present but blank");
    }
    return KeyExtraction.found(value, KeySource.PAYLOAD, "payload field " + pointer);
  }

  private static String firstLine(String text) {
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
