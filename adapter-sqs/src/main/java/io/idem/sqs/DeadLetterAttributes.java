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
import software.amazon.awssdk.services.sqs.model.MessageAttributeValue;

/**
 * The message attributes of a dead-letter copy: the reason first, then as many of the original
 * attributes as SQS allows. SQS caps a message at {@value #MAX_ATTRIBUTES} attributes and
 * {@value #MAX_MESSAGE_BYTES} bytes (body plus every attribute's name, type and value), so when the
 * original attributes do not all fit, the least important are left out and their names listed in
 * {@value #DROPPED_ATTRIBUTE}. Importance: {@link SqsInboundMessage#BODY_ENCODING_ATTRIBUTE}
 * (needed to read the payload), the key header, CloudEvents {@code ce-}/{@code ce_} attributes,
 * then the rest by name. If even the reason does not fit beside the body, its detail is shortened;
 * the cause, consumer group and attempt are always kept.
 */
final class DeadLetterAttributes {
  static final int MAX_ATTRIBUTES = 10;
  static final int MAX_MESSAGE_BYTES = 262_144;
  /** Names of original attributes left out of a dead-letter copy, comma-separated: {@value}. */
  static final String DROPPED_ATTRIBUTE = "idem-dropped-attributes";

  private DeadLetterAttributes() {}

  /**
   * @param original the attributes of the delivery being dead-lettered
   * @param body the body of the copy (the original body, unchanged)
   * @throws IdempotencyException when the body leaves no room for the reason
   */
  static Map<String, MessageAttributeValue> of(
      Map<String, MessageAttributeValue> original, DeadLetterReason reason, String body) {
    Map<String, MessageAttributeValue> reasonAttributes = new LinkedHashMap<>();
    reason.toHeaders().forEach((name, value) -> reasonAttributes.put(name, SqsInboundMessage.stringAttribute(value)));

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
      if (bodyBytes + size(result) <= MAX_MESSAGE_BYTES) {
        return result;
      }
      if (kept > 0) {
        keep = kept - 1;
        continue;
      }
      return withShortDetail(result, bodyBytes, reason);
    }
  }

  private static Map<String, MessageAttributeValue> withShortDetail(
      Map<String, MessageAttributeValue> attributes, int bodyBytes, DeadLetterReason reason) {
    Map<String, MessageAttributeValue> result = new LinkedHashMap<>(attributes);
    result.remove(DeadLetterReason.HEADER_KEY);
    result.remove(DeadLetterReason.HEADER_EXCEPTION);
    result.remove(DROPPED_ATTRIBUTE);
    result.remove(DeadLetterReason.HEADER_DETAIL);
    int room = MAX_MESSAGE_BYTES - bodyBytes - size(result)
        - utf8(DeadLetterReason.HEADER_DETAIL) - utf8("String") - utf8("…");
    if (room < 1) {
      throw new IdempotencyException("cannot dead-letter: a " + bodyBytes + "-byte body leaves no room"
          + " for the reason attributes within the SQS limit of " + MAX_MESSAGE_BYTES + " bytes (" + reason + ")");
    }
    String detail = reason.toHeaders().get(DeadLetterReason.HEADER_DETAIL);
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
