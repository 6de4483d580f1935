package io.idem.spi;

import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What {@link OutboxPublisher#publishAll} did with one row of a batch: {@link Status#SENT sent}
 * (the destination confirmed it), {@link Status#FAILED failed} with the cause (not confirmed, or
 * maybe not), or {@link Status#SKIPPED skipped} (not attempted, or held behind an earlier failure
 * of its ordering key). Immutable.
 *
 * @param id the row's id ({@link OutboxMessage#id()})
 * @param status what happened
 * @param failure what failed it; non-null exactly when {@code status} is {@link Status#FAILED}
 */
public record OutboxPublishResult(long id, Status status, @Nullable Throwable failure) {

  /** The outcome of one row of a batch. */
  public enum Status {
    /** Confirmed by the destination: the relay marks the row sent. */
    SENT,
    /**
     * Not confirmed: the relay classifies {@link #failure()} — a row failure is one attempt of the
     * row (parked when not retryable), a destination outage is charged to no row.
     */
    FAILED,
    /**
     * Not attempted (the batch stopped) or held behind an earlier failure of its ordering key in
     * the batch: due again, nothing charged.
     */
    SKIPPED
  }

  /**
   * @throws NullPointerException when {@code status} is null, or {@code FAILED} without a failure
   * @throws IllegalArgumentException when a {@code SENT} or {@code SKIPPED} result has a failure
   */
  public OutboxPublishResult {
    Objects.requireNonNull(status, "status");
    if (status == Status.FAILED) {
      Objects.requireNonNull(failure, "failure");
    } else if (failure != null) {
      throw new IllegalArgumentException("a " + status + " result has no failure, but got " + failure);
    }
  }

  /** {@code message} was confirmed. */
  public static OutboxPublishResult sent(OutboxMessage message) {
    return new OutboxPublishResult(message.id(), Status.SENT, null);
  }

  /** {@code message} was not confirmed because of {@code failure}. */
  public static OutboxPublishResult failed(OutboxMessage message, Throwable failure) {
    return new OutboxPublishResult(message.id(), Status.FAILED, failure);
  }

  /** {@code message} was not attempted, or held behind an earlier failure of its ordering key. */
  public static OutboxPublishResult skipped(OutboxMessage message) {
    return new OutboxPublishResult(message.id(), Status.SKIPPED, null);
  }
}
