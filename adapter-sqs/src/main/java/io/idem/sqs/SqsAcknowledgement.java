package io.idem.sqs;

import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import io.idem.ProcessingOutcome;
import io.idem.spi.Acknowledgement;
import io.idem.spi.SettlementRecord;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Settles one SQS delivery, always with the receipt handle of that delivery:
 *
 * <ul>
 *   <li>{@link #ack()} — {@code DeleteMessage}, or queued for a {@code DeleteMessageBatch} when
 *       the consumer's {@code deleteBatchWindow} is positive (the heartbeat keeps the message
 *       hidden until the batch goes out; a failed entry is reported, never counted as deleted,
 *       and the message comes back to be skipped as a duplicate);
 *   <li>{@link #retry(Duration)} — {@code ChangeMessageVisibility} to the delay rounded up to
 *       whole seconds (at most 12 h): SQS delivers it again no sooner than that. On a FIFO queue,
 *       for a message with the rest of its group behind it in the batch, nothing is sent: the
 *       consumer keeps it (and the group) hidden and runs it again in process after the delay, as
 *       the next attempt. When the queue's {@code RedrivePolicy} would move the message on its
 *       next receive (its {@code ApproximateReceiveCount} reached {@code maxReceiveCount}) and
 *       the consumer can send dead-letter copies, the message is dead-lettered now with a reason
 *       ({@code MAX_ATTEMPTS_EXCEEDED}, the detail naming {@code maxReceiveCount}) instead of
 *       being moved by SQS without one: Idem dead-letters at the lower of its {@code maxAttempts}
 *       and the queue's {@code maxReceiveCount};
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
 * runs out. What a call left behind is also kept in a {@link SettlementRecord} ({@link #record()}),
 * which the worker reads through {@link io.idem.spi.AdapterWorker#survive} as the other adapters'
 * workers do: settled once a method above returned (a retry in process included: the consumer
 * keeps that message, nobody hands it back), released after {@link #release()}, held for the
 * store after {@link #retryWhenStoreAvailable(Duration)}.
 */
final class SqsAcknowledgement implements Acknowledgement {
  private static final Logger LOG = LoggerFactory.getLogger(SqsIdempotentConsumer.class);
  private final Delivery delivery;
  private final VisibilityKeeper keeper;
  private final DeleteBatcher deletes;
  private final DeadLetters deadLetters;
  private final @Nullable Integer maxReceiveCount;
  private final String consumerGroup;
  private final boolean retryInProcess;
  private final SettlementRecord record = new SettlementRecord();
  private @Nullable Duration heldForRetry;
  /** What SQS was told ({@link #settled()}); the record says only that it was. */
  private @Nullable ProcessingOutcome settled;

  /**
   * @param maxReceiveCount the queue's {@code RedrivePolicy} limit, or {@code null} (none, or not
   *     to be checked: a retry in process is no receive)
   * @param retryInProcess keep the message for a retry in process instead of handing it to SQS
   */
  SqsAcknowledgement(Delivery delivery, VisibilityKeeper keeper, DeleteBatcher deletes, DeadLetters deadLetters,
      @Nullable Integer maxReceiveCount, String consumerGroup, boolean retryInProcess) {
    this.delivery = delivery;
    this.keeper = keeper;
    this.deletes = deletes;
    this.deadLetters = deadLetters;
    this.maxReceiveCount = maxReceiveCount;
    this.consumerGroup = consumerGroup;
    this.retryInProcess = retryInProcess;
  }

  @Override
  public void ack() {
    deletes.delete(delivery);
    settle(ProcessingOutcome.PROCESSED);
  }

  @Override
  public void retry(Duration delay) {
    Objects.requireNonNull(delay, "delay");
    if (retryInProcess) {
      heldForRetry = delay;
      settle(ProcessingOutcome.RETRY);
      return;
    }
    if (maxReceiveCount != null && delivery.receiveCount >= maxReceiveCount && !deadLetters.viaRedrivePolicy()) {
      int attempt = delivery.message.deliveryAttempt();
      DeadLetterReason reason = new DeadLetterReason(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED,
          "handler failed on attempt " + attempt + "; the message was received " + delivery.receiveCount
              + " times and the queue's RedrivePolicy (maxReceiveCount=" + maxReceiveCount + ") would move"
              + " it on its next receive without a reason, so Idem dead-letters it now",
          consumerGroup, null, attempt, null);
      LOG.error("dead-lettering {} at the queue's RedrivePolicy limit: {}", delivery, reason);
      deadLetters.deadLetter(delivery, reason);
      settle(ProcessingOutcome.DEAD_LETTERED);
      return;
    }
    keeper.changeVisibility(delivery, delay);
    settle(ProcessingOutcome.RETRY);
  }

  /** The delay of a retry to run in process (see {@link #retry(Duration)}), or {@code null}. */
  @Nullable Duration heldForRetry() {
    return heldForRetry;
  }

  /** Keeps the message; the consumer runs it again after {@code delay} (see the class description). */
  @Override
  public void retryWhenStoreAvailable(Duration delay) {
    Objects.requireNonNull(delay, "delay");
    record.markHeldForStore(delay);
  }

  /**
   * Hands the message back (visibility 0) and stops the heartbeat on it; a failure to do so is
   * logged, and the message then reappears when its visibility runs out.
   */
  @Override
  public void release() {
    keeper.handBack(List.of(delivery));
    record.markReleased();
    settle(ProcessingOutcome.RELEASED);
  }

  /** The delay asked by {@link #retryWhenStoreAvailable(Duration)}, or {@code null}. */
  @Nullable Duration heldForStore() {
    return record.heldForStore();
  }

  @Override
  public void deadLetter(DeadLetterReason reason) {
    Objects.requireNonNull(reason, "reason");
    deadLetters.deadLetter(delivery, reason);
    settle(ProcessingOutcome.DEAD_LETTERED);
  }

  private void settle(ProcessingOutcome outcome) {
    record.markSettled();
    settled = outcome;
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

  /** The side channel the worker reads after the pipeline returned or threw. */
  SettlementRecord record() {
    return record;
  }
}
