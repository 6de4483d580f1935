package io.idem.sqs;

import io.idem.IdempotencyException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.ChangeMessageVisibilityBatchRequestEntry;
import software.amazon.awssdk.services.sqs.model.ChangeMessageVisibilityBatchResponse;

/**
 * Everything this consumer does with {@code ChangeMessageVisibility}: the heartbeat that keeps
 * held messages hidden, the retry backoff, and handing unprocessed messages back. Thread-safe.
 */
final class VisibilityKeeper {
  private static final Logger LOG = LoggerFactory.getLogger(SqsIdempotentConsumer.class);
  /** SQS caps a message's total visibility at 12 h from its receive. */
  static final long MAX_VISIBILITY_SECONDS = 43_200;

  private final SqsClient sqs;
  private final String queueUrl;
  private final Duration visibilityTimeout;
  private final long extendBelowNanos;
  private final Set<Delivery> held = ConcurrentHashMap.newKeySet();
  private final AttemptLedger ledger;

  VisibilityKeeper(
      SqsClient sqs, String queueUrl, Duration visibilityTimeout, double heartbeatShare, AttemptLedger ledger) {
    this.sqs = sqs;
    this.ledger = ledger;
    this.queueUrl = queueUrl;
    this.visibilityTimeout = visibilityTimeout;
    this.extendBelowNanos = (long) (visibilityTimeout.toNanos() * (1.0 - heartbeatShare));
  }

  void hold(Delivery delivery) {
    held.add(delivery);
  }

  /** Stops extending {@code delivery} (settled, or left to reappear on its own). */
  void forget(Delivery delivery) {
    delivery.unhold();
    held.remove(delivery);
  }

  /**
   * Stops extending {@code delivery} without a handler run having counted: it reappears when its
   * visibility runs out, and that receive is not counted as an attempt ({@link AttemptLedger}).
   */
  void leave(Delivery delivery) {
    forget(delivery);
    ledger.notRun(delivery.messageId());
  }

  int heldCount() {
    return held.size();
  }

  /** True when {@code delivery} has used more than the heartbeat share of its visibility. */
  boolean due(Delivery delivery, long nowNanos) {
    return delivery.remainingNanos(nowNanos) < extendBelowNanos;
  }

  /** One heartbeat: extends every held message that is due. Runs on the timer thread. */
  void heartbeat() {
    long now = System.nanoTime();
    for (Delivery delivery : held) {
      if (!delivery.deleting && due(delivery, now)) {
        extend(delivery);
      }
    }
  }

  /**
   * Extends {@code delivery} to a full visibility timeout from now, if it is still held.
   *
   * @return false when it is no longer held or SQS refused (typically: the receipt handle is no
   *     longer current because the visibility already ran out and the message was received again)
   */
  boolean extend(Delivery delivery) {
    synchronized (delivery) {
      if (!delivery.held()) {
        return false;
      }
      long sent = System.nanoTime();
      try {
        sqs.changeMessageVisibility(b -> b.queueUrl(queueUrl)
            .receiptHandle(delivery.receiptHandle())
            .visibilityTimeout((int) visibilityTimeout.getSeconds()));
        delivery.extendedAt(sent, visibilityTimeout);
        LOG.debug("extended visibility of {} by {}", delivery, visibilityTimeout);
        return true;
      } catch (SdkException e) {
        if (delivery.deleting || !delivery.held()) {
          LOG.debug("visibility extension of {} raced its settlement: {}", delivery, e.toString());
        } else {
          LOG.warn("could not extend the visibility of {} on {}: {}; if it is delivered again the"
              + " store deduplicates it", delivery, queueUrl, e.toString());
        }
        return false;
      }
    }
  }

  /**
   * Stops extending {@code delivery} and makes it visible again after {@code delay} (rounded up to
   * whole seconds, at most 12 h): the SQS way to retry no sooner than {@code delay}.
   *
   * @throws IdempotencyException when SQS refused; the message then reappears when its current
   *     visibility runs out
   */
  void changeVisibility(Delivery delivery, Duration delay) {
    int seconds = (int) Math.min(MAX_VISIBILITY_SECONDS, ceilSeconds(delay));
    synchronized (delivery) {
      forget(delivery);
      try {
        sqs.changeMessageVisibility(b -> b.queueUrl(queueUrl)
            .receiptHandle(delivery.receiptHandle())
            .visibilityTimeout(seconds));
      } catch (SdkException e) {
        throw new IdempotencyException("could not set the visibility of " + delivery + " on "
            + queueUrl + " to " + seconds + " s: " + e.getMessage(), e);
      }
    }
  }

  /**
   * Hands messages back without a handler run that counts (visibility 0), e.g. the rest of a batch
   * on shutdown, the rest of a FIFO group behind a message that could not be settled, a handler
   * interrupted at shutdown. Each is recorded in the {@link AttemptLedger}, so that its next
   * receive is not counted as an attempt. Failures are logged: the messages then reappear when
   * their visibility runs out.
   */
  void handBack(List<Delivery> deliveries) {
    // at shutdown the calling thread may be interrupted, and the SDK refuses to send from an
    // interrupted thread: the flag is cleared for the call and set again afterwards
    boolean interrupted = Thread.interrupted();
    try {
      handBackUninterrupted(deliveries);
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private void handBackUninterrupted(List<Delivery> deliveries) {
    List<Delivery> batch = new ArrayList<>();
    for (Delivery delivery : deliveries) {
      forget(delivery);
      ledger.notRun(delivery.messageId());
      batch.add(delivery);
      if (batch.size() == SqsConsumerConfig.MAX_MESSAGES) {
        handBackBatch(batch);
        batch.clear();
      }
    }
    if (!batch.isEmpty()) {
      handBackBatch(batch);
    }
  }

  /** Hands back every message still held and not being deleted (shutdown past its timeout). */
  void handBackAll() {
    List<Delivery> all = new ArrayList<>();
    for (Delivery delivery : held) {
      if (!delivery.deleting) {
        all.add(delivery);
      }
    }
    handBack(all);
    held.clear();
  }

  private void handBackBatch(List<Delivery> batch) {
    List<ChangeMessageVisibilityBatchRequestEntry> entries = new ArrayList<>();
    for (int i = 0; i < batch.size(); i++) {
      entries.add(ChangeMessageVisibilityBatchRequestEntry.builder()
          .id(Integer.toString(i)).receiptHandle(batch.get(i).receiptHandle()).visibilityTimeout(0).build());
    }
    try {
      ChangeMessageVisibilityBatchResponse response =
          sqs.changeMessageVisibilityBatch(b -> b.queueUrl(queueUrl).entries(entries));
      response.failed().forEach(f -> LOG.warn(
          "could not hand back {} on {} ({}: {}); it reappears when its visibility runs out",
          batch.get(Integer.parseInt(f.id())), queueUrl, f.code(), f.message()));
    } catch (SdkException e) {
      LOG.warn("could not hand back {} message(s) on {}: {}; they reappear when their visibility"
          + " runs out", batch.size(), queueUrl, e.toString());
    }
  }

  static long ceilSeconds(Duration delay) {
    if (delay.isNegative()) {
      return 0;
    }
    long seconds = delay.getSeconds();
    return delay.getNano() > 0 ? seconds + 1 : seconds;
  }
}
