package io.idem.deadletters;

import io.idem.DeadLetterCause;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.EnumSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * Which dead letters an operation takes: every criterion given must match (ids, groups and causes
 * each match any of theirs). {@link #all()} takes every dead letter; a selection with no criterion
 * is not allowed otherwise, so that "replay everything" is always said explicitly. Immutable.
 */
public final class DeadLetterSelection {
  private static final DeadLetterSelection ALL = new DeadLetterSelection(new Builder(), true);

  private final Set<String> ids;
  private final Set<String> groups;
  private final Set<DeadLetterCause> causes;
  private final @Nullable Instant since;
  private final @Nullable Instant until;
  private final @Nullable String keyPattern;
  private final @Nullable Pattern keyRegex;
  private final @Nullable String consumerGroup;
  private final boolean all;

  private DeadLetterSelection(Builder b, boolean all) {
    this.ids = Set.copyOf(b.ids);
    this.groups = Set.copyOf(b.groups);
    this.causes = b.causes.isEmpty() ? Set.of() : EnumSet.copyOf(b.causes);
    this.since = b.since;
    this.until = b.until;
    this.keyPattern = b.keyPattern;
    this.keyRegex = b.keyPattern == null ? null : glob(b.keyPattern);
    this.consumerGroup = b.consumerGroup;
    this.all = all;
  }

  /** Every dead letter. */
  public static DeadLetterSelection all() {
    return ALL;
  }

  /** Starts a selection by criteria. */
  public static Builder builder() {
    return new Builder();
  }

  /** Whether this is {@link #all()}. */
  public boolean isAll() {
    return all;
  }

  /** Whether {@code deadLetter} is selected. */
  public boolean matches(DeadLetter deadLetter) {
    if (all) {
      return true;
    }
    if (!ids.isEmpty() && !ids.contains(deadLetter.id())) {
      return false;
    }
    if (!groups.isEmpty() && !groups.contains(DeadLetterGroup.idOf(deadLetter))) {
      return false;
    }
    if (!causes.isEmpty() && (deadLetter.reason() == null || !causes.contains(deadLetter.reason().cause()))) {
      return false;
    }
    Instant at = deadLetter.deadLetteredAt();
    if ((since != null || until != null) && at == null) {
      return false; // a time criterion never takes a dead letter of unknown time
    }
    if (since != null && at != null && at.isBefore(since)) {
      return false;
    }
    if (until != null && at != null && !at.isBefore(until)) {
      return false;
    }
    if (keyRegex != null && (deadLetter.key() == null || !keyRegex.matcher(deadLetter.key()).matches())) {
      return false;
    }
    return consumerGroup == null || consumerGroup.equals(deadLetter.consumerGroup());
  }

  /** The criteria, for messages: {@code "cause NON_RETRYABLE, key order-1*"}; {@code "all"}. */
  public String describe() {
    if (all) {
      return "all";
    }
    List<String> parts = new ArrayList<>();
    if (!ids.isEmpty()) {
      parts.add("id " + String.join(" or ", ids));
    }
    if (!groups.isEmpty()) {
      parts.add("group " + String.join(" or ", groups));
    }
    if (!causes.isEmpty()) {
      parts.add("cause " + String.join(" or ", causes.stream().map(Enum::name).toList()));
    }
    if (since != null) {
      parts.add("since " + since);
    }
    if (until != null) {
      parts.add("until " + until);
    }
    if (keyPattern != null) {
      parts.add("key " + keyPattern);
    }
    if (consumerGroup != null) {
      parts.add("consumer group " + consumerGroup);
    }
    return String.join(", ", parts);
  }

  @Override
  public String toString() {
    return "DeadLetterSelection[" + describe() + "]";
  }

  /** {@code *} any run of characters, {@code ?} one character; the rest literal. */
  static Pattern glob(String pattern) {
    StringBuilder regex = new StringBuilder();
    StringBuilder literal = new StringBuilder();
    for (char c : pattern.toCharArray()) {
      if (c == '*' || c == '?') {
        if (literal.length() > 0) {
          regex.append(Pattern.quote(literal.toString()));
          literal.setLength(0);
        }
        regex.append(c == '*' ? ".*" : ".");
      } else {
        literal.append(c);
      }
    }
    if (literal.length() > 0) {
      regex.append(Pattern.quote(literal.toString()));
    }
    return Pattern.compile(regex.toString(), Pattern.DOTALL);
  }

  /** Builder of a {@link DeadLetterSelection}. Not thread-safe. */
  public static final class Builder {
    private final Set<String> ids = new LinkedHashSet<>();
    private final Set<String> groups = new LinkedHashSet<>();
    private final Set<DeadLetterCause> causes = new LinkedHashSet<>();
    private @Nullable Instant since;
    private @Nullable Instant until;
    private @Nullable String keyPattern;
    private @Nullable String consumerGroup;

    private Builder() {}

    /** Dead letters with one of these ids ({@link DeadLetter#id()}). */
    public Builder ids(Collection<String> values) {
      values.forEach(v -> ids.add(Objects.requireNonNull(v, "id")));
      return this;
    }

    /** Dead letters of one of these groups ({@link DeadLetterGroup#id()}). */
    public Builder groups(Collection<String> values) {
      values.forEach(v -> groups.add(Objects.requireNonNull(v, "group")));
      return this;
    }

    /** Dead letters with one of these Idem causes (never a broker-made one). */
    public Builder causes(Collection<DeadLetterCause> values) {
      values.forEach(v -> causes.add(Objects.requireNonNull(v, "cause")));
      return this;
    }

    /** Dead letters stored at or after {@code value} (none of unknown time). */
    public Builder since(@Nullable Instant value) {
      this.since = value;
      return this;
    }

    /** Dead letters stored before {@code value} (none of unknown time). */
    public Builder until(@Nullable Instant value) {
      this.until = value;
      return this;
    }

    /** Dead letters whose idempotency key matches the glob ({@code *}, {@code ?}). */
    public Builder keyPattern(@Nullable String value) {
      this.keyPattern = value;
      return this;
    }

    /** Dead letters of this consumer group. */
    public Builder consumerGroup(@Nullable String value) {
      this.consumerGroup = value;
      return this;
    }

    /** Whether any criterion was given. */
    public boolean hasCriteria() {
      return !ids.isEmpty() || !groups.isEmpty() || !causes.isEmpty() || since != null || until != null
          || keyPattern != null || consumerGroup != null;
    }

    /**
     * @throws IllegalArgumentException without any criterion (use {@link #all()}), or with
     *     {@code since} not before {@code until}
     */
    public DeadLetterSelection build() {
      if (!hasCriteria()) {
        throw new IllegalArgumentException("a selection needs at least one criterion (id, group, cause, since,"
            + " until, key pattern, consumer group); DeadLetterSelection.all() takes every dead letter");
      }
      if (since != null && until != null && !since.isBefore(until)) {
        throw new IllegalArgumentException("since must be before until, but were " + since + " and " + until);
      }
      return new DeadLetterSelection(this, false);
    }
  }
}
