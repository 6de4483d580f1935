package io.idem.deadletters;

import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Dead letters that failed the same way: the same cause, source, exception type and consumer
 * group. Immutable.
 *
 * @param id a short stable id of the four (8 hex digits of their SHA-256), to select the group by
 * @param cause the Idem cause, or {@code null} for dead letters the broker made itself
 * @param source the topic or queue the originals came from, or {@code null} when unknown
 * @param exceptionClass the handler's exception type, or {@code null}
 * @param consumerGroup the consumer group that gave up, or {@code null} (broker-made)
 * @param count how many dead letters
 * @param first the earliest {@link DeadLetter#deadLetteredAt()}, {@code null} when none is known
 * @param last the latest one, {@code null} when none is known
 */
public record DeadLetterGroup(
    String id,
    @Nullable DeadLetterCause cause,
    @Nullable String source,
    @Nullable String exceptionClass,
    @Nullable String consumerGroup,
    int count,
    @Nullable Instant first,
    @Nullable Instant last) {

  public DeadLetterGroup {
    Objects.requireNonNull(id, "id");
  }

  /** The id of the group {@code deadLetter} belongs to. */
  public static String idOf(DeadLetter deadLetter) {
    DeadLetterReason r = deadLetter.reason();
    String text = (r == null ? "-" : r.cause().name()) + "|" + Objects.toString(deadLetter.source(), "-")
        + "|" + (r == null || r.exceptionClass() == null ? "-" : r.exceptionClass())
        + "|" + (r == null ? "-" : r.consumerGroup());
    try {
      byte[] digest = MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
      return HexFormat.of().formatHex(digest, 0, 4);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
  }

  /** The groups of {@code deadLetters}, the largest first (then by first time, then id). */
  public static List<DeadLetterGroup> of(List<DeadLetter> deadLetters) {
    Map<String, DeadLetterGroup> groups = new LinkedHashMap<>();
    for (DeadLetter d : deadLetters) {
      String id = idOf(d);
      DeadLetterReason r = d.reason();
      Instant at = d.deadLetteredAt();
      groups.merge(id, new DeadLetterGroup(id, r == null ? null : r.cause(), d.source(),
          r == null ? null : r.exceptionClass(), r == null ? null : r.consumerGroup(), 1, at, at),
          (a, b) -> new DeadLetterGroup(a.id, a.cause, a.source, a.exceptionClass, a.consumerGroup,
              a.count + b.count, min(a.first, b.first), max(a.last, b.last)));
    }
    List<DeadLetterGroup> sorted = new ArrayList<>(groups.values());
    sorted.sort(Comparator.comparingInt(DeadLetterGroup::count).reversed()
        .thenComparing(DeadLetterGroup::first, Comparator.nullsLast(Comparator.naturalOrder()))
        .thenComparing(DeadLetterGroup::id));
    return sorted;
  }

  private static @Nullable Instant min(@Nullable Instant a, @Nullable Instant b) {
    return a == null ? b : b == null ? a : a.isBefore(b) ? a : b;
  }

  private static @Nullable Instant max(@Nullable Instant a, @Nullable Instant b) {
    return a == null ? b : b == null ? a : a.isAfter(b) ? a : b;
  }
}
