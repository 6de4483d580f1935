package io.idem.sqs;

import io.idem.DeadLetterReason;
import io.idem.IdempotencyException;
import io.idem.IdempotencyKeyExtractor;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import software.amazon.awssdk.services.sqs.model.MessageAttributeValue;

/**
 * The message attributes of a dead-letter copy: the reason first, then as many of the original
 * attributes as SQS allows. SQS caps a message at {@value #MAX_ATTRIBUTES} attributes and the
 * dead-letter queue's {@code MaximumMessageSize} (256 KiB by default, up to 1 MiB; body plus every
 * attribute's name, type and value), so when the
 * original attributes do not all fit, the least important are left out and their names listed in
 * {@value #DROPPED_ATTRIBUTE}. Importance: {@link SqsInboundMessage#BODY_ENCODING_ATTRIBUTE}
 * (needed to read the payload), the key header, CloudEvents {@code ce-}/{@code ce_} attributes,
 * then the rest by name. If even the reason does not fit beside the body, its detail is shortened;
 * the cause, consumer group and attempt are always kept. Reason values are made acceptable to
 * SQS, which refuses a message with characters outside {@code #x9 | #xA | #xD | #x20-#xD7FF |
 * #xE000-#xFFFD | #x10000-#x10FFFF}: such characters, and halves of a surrogate pair (the core
 * cuts long details by {@code char}), become U+FFFD; a shortened detail is never cut inside a
 * pair.
 */
final class DeadLetterAttributes {
  static final int MAX_ATTRIBUTES = 10;
  /** The SQS default {@code MaximumMessageSize}: 256 KiB. */
  static final int MAX_MESSAGE_BYTES = 262_144;
  /** Names of original attributes left out of a dead-letter copy, comma-separated: {@value}. */
  static final String DROPPED_ATTRIBUTE = "idem-dropped-attributes";

  private DeadLetterAttributes() {}

  /** {@link #of(Map, DeadLetterReason, String, int)} with the SQS default size limit. */
  static Map<String, MessageAttributeValue> of(
      Map<String, MessageAttributeValue> original, DeadLetterReason reason, String body) {
    return of(original, reason, body, MAX_MESSAGE_BYTES);
  }

  /**
   * @param original the attributes of the delivery being dead-lettered
   * @param body the body of the copy (the original body, unchanged)
   * @param maxMessageBytes the dead-letter queue's {@code MaximumMessageSize}, in bytes
   * @throws IdempotencyException when the body leaves no room for the reason
   */
  static Map<String, MessageAttributeValue> of(
      Map<String, MessageAttributeValue> original, DeadLetterReason reason, String body, int maxMessageBytes) {
    Map<String, String> reasonText = reasonHeaders(reason);
    Map<String, MessageAttributeValue> reasonAttributes = new LinkedHashMap<>();
    reasonText.forEach((name, value) -> reasonAttributes.put(name, SqsInboundMessage.stringAttribute(value)));

    List<String> originals = new ArrayList<>();
    for (String name : original.keySet()) {
      if (!reasonAttributes.containsKey(name) && !name.equals(DROPPED_ATTRIBUTE)) {
        originals.add(name);
      }
    }
    originals.sort(Comparator.comparingInt(DeadLetterAttributes::rank).thenComparing(Comparator.naturalOrder()));

    int bodyBytes = body.getBytes(StandardCharsets.UTF_8).length;
    int keep = Math.min(originals.size(), MAX_ATTRIBUTES - reasonAttributes.size());
    while (true) {
      Map<String, MessageAttributeValue> result = new LinkedHashMap<>(reasonAttributes);
      boolean dropping = keep < originals.size();
      int kept = dropping ? Math.min(keep, MAX_ATTRIBUTES - reasonAttributes.size() - 1) : keep;
      for (int i = 0; i < kept; i++) {
        result.put(originals.get(i), original.get(originals.get(i)));
      }
      if (dropping) {
        result.put(DROPPED_ATTRIBUTE,
            SqsInboundMessage.stringAttribute(String.join(",", originals.subList(kept, originals.size()))));
      }
      if (bodyBytes + size(result) <= maxMessageBytes) {
        return result;
      }
      if (kept > 0) {
        keep = kept - 1;
        continue;
      }
      return withShortDetail(result, bodyBytes, reason, reasonText, maxMessageBytes);
    }
  }

  /** The reason's headers with every value made acceptable to SQS ({@link #sqsText(String)}). */
  static Map<String, String> reasonHeaders(DeadLetterReason reason) {
    Map<String, String> headers = new LinkedHashMap<>();
    reason.toHeaders().forEach((name, value) -> headers.put(name, sqsText(value)));
    return headers;
  }

  /**
   * {@code text} with each character SQS refuses in a message replaced with U+FFFD: outside
   * {@code #x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF}, or half of a
   * surrogate pair.
   */
  static String sqsText(String text) {
    StringBuilder out = null;
    for (int i = 0; i < text.length(); ) {
      int c = text.codePointAt(i);
      int width = Character.charCount(c);
      boolean allowed = c == 0x9 || c == 0xA || c == 0xD
          || (c >= 0x20 && c <= 0xD7FF) || (c >= 0xE000 && c <= 0xFFFD) || (c >= 0x10000 && c <= 0x10FFFF);
      if (!allowed && out == null) {
        out = new StringBuilder(text.length()).append(text, 0, i);
      }
      if (out != null) {
        if (allowed) {
          out.appendCodePoint(c);
        } else {
          out.append('\uFFFD');
        }
      }
      i += width;
    }
    return out == null ? text : out.toString();
  }

  private static Map<String, MessageAttributeValue> withShortDetail(Map<String, MessageAttributeValue> attributes,
      int bodyBytes, DeadLetterReason reason, Map<String, String> reasonText, int maxMessageBytes) {
    Map<String, MessageAttributeValue> result = new LinkedHashMap<>(attributes);
    result.remove(DeadLetterReason.HEADER_KEY);
    result.remove(DeadLetterReason.HEADER_EXCEPTION);
    result.remove(DROPPED_ATTRIBUTE);
    result.remove(DeadLetterReason.HEADER_DETAIL);
    int room = maxMessageBytes - bodyBytes - size(result)
        - utf8(DeadLetterReason.HEADER_DETAIL) - utf8("String") - utf8("…");
    if (room < 1) {
      throw new IdempotencyException("cannot dead-letter: a " + bodyBytes + "-byte body leaves no room"
          + " for the reason attributes within the MaximumMessageSize of " + maxMessageBytes + " bytes (" + reason
          + ")");
    }
    String detail = Objects.requireNonNullElse(reasonText.get(DeadLetterReason.HEADER_DETAIL), "");
    int end = Math.min(detail.length(), room);
    while (end > 0 && utf8(detail.substring(0, end)) > room) {
      end--;
    }
    if (end > 0 && Character.isHighSurrogate(detail.charAt(end - 1))) {
      end--;
    }
    result.put(DeadLetterReason.HEADER_DETAIL, SqsInboundMessage.stringAttribute(detail.substring(0, end) + "…"));
    return result;
  }

  private static int rank(String name) {
    if (name.equals(SqsInboundMessage.BODY_ENCODING_ATTRIBUTE)) {
      return 0;
    }
    if (name.equals(IdempotencyKeyExtractor.DEFAULT_HEADER)) {
      return 1;
    }
    if (name.startsWith("ce-") || name.startsWith("ce_") || name.startsWith("cloudEvents")) {
      return 2;
    }
    return 3;
  }

  /** Bytes SQS counts for these attributes: name, data type and value of each. */
  static int size(Map<String, MessageAttributeValue> attributes) {
    int total = 0;
    for (Map.Entry<String, MessageAttributeValue> e : attributes.entrySet()) {
      MessageAttributeValue v = e.getValue();
      total += utf8(e.getKey()) + utf8(v.dataType());
      if (v.stringValue() != null) {
        total += utf8(v.stringValue());
      }
      if (v.binaryValue() != null) {
        total += v.binaryValue().asByteArray().length;
      }
    }
    return total;
  }

  private static int utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8).length;
  }
}
