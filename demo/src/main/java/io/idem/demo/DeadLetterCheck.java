package io.idem.demo;

import io.idem.testkit.DeadLetteredMessage;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.idem.DeadLetterCause;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.jspecify.annotations.Nullable;

/**
 * The ledger's keyless messages: how they are published, and whether the dead-letter destination
 * holds exactly them. Each carries its own id in the payload ({@value #ID_FIELD}), so a dead
 * letter is matched to the message it came from, not merely counted.
 */
final class DeadLetterCheck {
  /** Payload field carrying a keyless message's id: {@value}. */
  static final String ID_FIELD = "keylessId";
  private static final ObjectMapper JSON = new ObjectMapper();

  private DeadLetterCheck() {}

  /** A message without any idempotency key, which the pipeline must dead-letter with {@code NO_KEY}. */
  static Outbound keyless(String id) {
    byte[] payload = ("{\"type\":\"OrderPaid\",\"note\":\"no idempotency key\",\"" + ID_FIELD + "\":\"" + id + "\"}")
        .getBytes(StandardCharsets.UTF_8);
    return new Outbound(Map.of("x-keyless", new byte[] {'1'}), payload);
  }

  /**
   * Keyless messages missing from {@code found} (or found without cause {@code NO_KEY}), plus
   * dead letters that are not one of {@code expectedIds}. Second copies of an expected message
   * are not counted: dead-lettering is at least once (copy first, then remove the original).
   */
  static long wrong(List<DeadLetteredMessage> found, Collection<String> expectedIds) {
    return wrong(found, expectedIds, Integer.MAX_VALUE);
  }

  /**
   * As {@link #wrong(List, Collection)}, and also counts as wrong each further copy of an
   * expected message that is not the consequence dead-lettering at least once allows: a copy
   * beyond {@code maxCopies} of one message, or a copy whose payload or identifiers (the
   * adapter's {@value #IDENTIFIER_PREFIX}* headers: Kafka's original topic, partition, offset and
   * timestamp, JMS's original message id and queue) differ from the first copy's — a second copy
   * made after a crash between storing the copy and removing the original carries the same ones.
   */
  static long wrong(List<DeadLetteredMessage> found, Collection<String> expectedIds, int maxCopies) {
    Set<String> expected = new HashSet<>(expectedIds);
    Map<String, DeadLetteredMessage> first = new HashMap<>();
    Map<String, Integer> copies = new HashMap<>();
    long wrong = 0;
    for (DeadLetteredMessage d : found) {
      String id = idOf(d);
      if (id != null && expected.contains(id) && DeadLetterCause.NO_KEY.name().equals(d.cause())) {
        DeadLetteredMessage earlier = first.putIfAbsent(id, d);
        int n = copies.merge(id, 1, Integer::sum);
        if (n > maxCopies || (earlier != null && !sameIdentifiers(earlier, d))) {
          wrong++;
        }
      } else {
        wrong++;
      }
    }
    return wrong + (expected.size() - first.size());
  }

  /** Start of the headers that identify the original of a dead-letter copy: {@value}. */
  static final String IDENTIFIER_PREFIX = "idem-original-";

  private static boolean sameIdentifiers(DeadLetteredMessage a, DeadLetteredMessage b) {
    return Arrays.equals(a.payload(), b.payload()) && identifiers(a).equals(identifiers(b));
  }

  private static Map<String, String> identifiers(DeadLetteredMessage d) {
    Map<String, String> ids = new TreeMap<>();
    d.headers().forEach((name, value) -> {
      if (name.startsWith(IDENTIFIER_PREFIX)) {
        ids.put(name, value);
      }
    });
    return ids;
  }

  /** What is wrong, for the log: the unexpected dead letters and the missing ids (at most 10 each). */
  static String describe(List<DeadLetteredMessage> found, Collection<String> expectedIds) {
    Set<String> missing = new HashSet<>(expectedIds);
    List<String> unexpected = new ArrayList<>();
    for (DeadLetteredMessage d : found) {
      String id = idOf(d);
      if (id != null && missing.contains(id) && DeadLetterCause.NO_KEY.name().equals(d.cause())) {
        missing.remove(id);
      } else if (id == null || !expectedIds.contains(id) || !DeadLetterCause.NO_KEY.name().equals(d.cause())) {
        unexpected.add(d.cause() + " " + new String(d.payload(), StandardCharsets.UTF_8));
      }
    }
    return found.size() + " dead letters; unexpected: " + unexpected.subList(0, Math.min(10, unexpected.size()))
        + (unexpected.size() > 10 ? " …" : "") + "; keyless messages not dead-lettered: "
        + missing.stream().limit(10).toList() + (missing.size() > 10 ? " …" : "");
  }

  private static @Nullable String idOf(DeadLetteredMessage d) {
    try {
      JsonNode node = JSON.readTree(d.payload());
      return node != null && node.hasNonNull(ID_FIELD) ? node.get(ID_FIELD).asText() : null;
    } catch (IOException e) {
      return null;
    }
  }
}
