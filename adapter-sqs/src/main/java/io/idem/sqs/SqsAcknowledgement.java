package io.idem.sqs;

import io.idem.DeadLetterReason;
import io.idem.ProcessingOutcome;
import io.idem.spi.Acknowledgement;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Settles one SQS delivery, always with the receipt handle of that delivery:
 *
 * <ul>
 *   <li>{@link #ack()} — {@code DeleteMessage}, or queued for a {@code DeleteMessageBatch} when
 *       the consumer's {@code deleteBatchWindow} is positive (the heartbeat keeps the message
 *       hidden until the batch goes out; a failed entry is reported, never counted as deleted,
 *       and the message comes back to be skipped as a duplicate);
 *   <li>{@link #retry(Duration)} — {@code ChangeMessageVisibility} to the delay rounded up to
 *       whole seconds (at most 12 h): SQS delivers it again no sooner than that;
 *   <li>{@link #retryWhenStoreAvailable(Duration)} — nothing is sent to SQS: the message stays
 *       hidden (the visibility heartbeat, or the consumer itself when the heartbeat is off, keeps
 *       extending it) and the consumer runs it through the pipeline again after the delay, in
 *       process. It is not received again, so its {@code ApproximateReceiveCount} does not grow
 *       toward a {@code RedrivePolicy}'s {@code maxReceiveCount} however long the store is down
 *       (up to SQS's 12-hour cap on a message's visibility; then it reappears);
 *   <li>{@link #release()} (the consumer is closing and interrupted the handler) —
 *       {@code ChangeMessageVisibility} to 0 at once, so that the message is received again
 *       (by another consumer, or this queue's next one) without waiting for its visibility to run
 *       out. SQS counts every receive in {@code ApproximateReceiveCount}, so that next receive is
 *       one more, as it would be after a crash; nothing else is counted and nothing is
 *       dead-lettered;
 *   <li>{@link #deadLetter(DeadLetterReason)} — with a dead-letter queue configured:
 *       {@code SendMessage} of a copy (original body and attributes plus the reason, trimmed to
 *       SQS limits), then the delete; otherwise visibility 0 so that the queue's
 *       {@code RedrivePolicy} moves it once its receive count passes {@code maxReceiveCount}.
 * </ul>
 *
 * <p>Used once, by the thread processing the delivery. A method that returns has settled the
 * message ({@link #settled()}): its delete was sent or queued, or its visibility was changed so
 * that it reappears for a retry or the {@code RedrivePolicy}; whatever is thrown afterwards never
 * touches it again. A method that throws leaves the message in the queue: the consumer releases
 * it after the retry backoff if it still holds it, otherwise it reappears when its visibility
 * runs out.
 */
final class SqsAcknowledgement implements Acknowledgement {
  private final Delivery delivery;
  private final VisibilityKeeper keeper;
  private final DeleteBatcher deletes;
  private final DeadLetters deadLetters;
  private @Nullable Duration heldForStore;
  private @Nullable ProcessingOutcome settled;

  SqsAcknowledgement(Delivery delivery, VisibilityKeeper keeper, DeleteBatcher deletes, DeadLetters deadLetters) {
    this.delivery = delivery;
    this.keeper = keeper;
    this.deletes = deletes;
    this.deadLetters = deadLetters;
  }

  @Override
  public void ack() {
    deletes.delete(delivery);
    settled = ProcessingOutcome.PROCESSED;
  }

  @Override
  public void retry(Duration delay) {
    Objects.requireNonNull(delay, "delay");
    keeper.changeVisibility(delivery, delay);
    settled = ProcessingOutcome.RETRY;
  }

  /** Keeps the message; the consumer runs it again after {@code delay} (see the class description). */
  @Override
  public void retryWhenStoreAvailable(Duration delay) {
    Objects.requireNonNull(delay, "delay");
    heldForStore = delay;
  }

  /**
   * Hands the message back (visibility 0) and stops the heartbeat on it; a failure to do so is
   * logged, and the message then reappears when its visibility runs out.
   */
  @Override
  public void release() {
    keeper.handBack(List.of(delivery));
    settled = ProcessingOutcome.RELEASED;
  }

  /** The delay asked by {@link #retryWhenStoreAvailable(Duration)}, or {@code null}. */
  @Nullable Duration heldForStore() {
    return heldForStore;
  }

  @Override
  public void deadLetter(DeadLetterReason reason) {
    Objects.requireNonNull(reason, "reason");
    deadLetters.deadLetter(delivery, reason);
    settled = ProcessingOutcome.DEAD_LETTERED;
  }

  /**
   * What SQS was told, once a settling method returned: {@code PROCESSED} (delete sent or
   * queued), {@code RETRY} (visibility set to the backoff), {@code RELEASED} (handed back at
   * shutdown) or {@code DEAD_LETTERED} (copied and
   * delete sent or queued, or handed back for the {@code RedrivePolicy}); {@code null} before, or
   * when it threw. {@link #retryWhenStoreAvailable(Duration)} does not settle.
   */
  @Nullable ProcessingOutcome settled() {
    return settled;
  }
}
