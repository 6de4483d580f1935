package io.idem.deadletters;

import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What a replay or discard did with one selected dead letter. Immutable.
 *
 * @param deadLetterId the dead letter's id
 * @param consumerGroup its Idem consumer group, or {@code null}
 * @param key its idempotency key, or {@code null}
 * @param outcome what happened
 * @param target where it was (or would be) republished, or {@code null}
 * @param detail one line: why it was refused or failed, or what the store said of the key
 */
public record ActionResult(
    String deadLetterId,
    @Nullable String consumerGroup,
    @Nullable String key,
    Outcome outcome,
    @Nullable String target,
    String detail) {

  /** What happened to one dead letter. */
  public enum Outcome {
    /** Republished (confirmed), then removed. */
    REPLAYED,
    /** Republished (confirmed) and kept ({@link ReplayOptions#keep()}). */
    COPIED,
    /** Removed, with a record. */
    DISCARDED,
    /** Dry run: would be replayed. */
    WOULD_REPLAY,
    /** Dry run: would be discarded. */
    WOULD_DISCARD,
    /** Not touched: a rule refused it (not Idem's, loop guard, key from the broker id). */
    REFUSED,
    /** Tried and failed (the source is gone, the broker did not confirm); the dead letter stays. */
    FAILED;

    /** Whether the dead letter was refused or failed. */
    public boolean isProblem() {
      return this == REFUSED || this == FAILED;
    }
  }

  public ActionResult {
    Objects.requireNonNull(deadLetterId, "deadLetterId");
    Objects.requireNonNull(outcome, "outcome");
    Objects.requireNonNull(detail, "detail");
  }
}
