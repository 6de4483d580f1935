package io.idem.sqs;

import io.idem.IdempotencyException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.BatchResultErrorEntry;
import software.amazon.awssdk.services.sqs.model.DeleteMessageBatchRequestEntry;
import software.amazon.awssdk.services.sqs.model.DeleteMessageBatchResponse;

/**
 * Deletes acknowledged messages, each with the receipt handle of the delivery that was processed.
 * With a positive window, deletes wait up to that long to share a {@code DeleteMessageBatch} of up
 * to 10 entries; the visibility heartbeat keeps them hidden meanwhile. Each entry's result is read
 * on its own: a failed entry is never counted as deleted. Entries failing on the server's side
 * ({@code SenderFault=false}) or in transit are tried again up to {@value #MAX_TRIES} times; the
 * rest are reported and left to come back, where the store skips them as duplicates. In batch
 * mode ({@code alwaysQueue}) a delete is queued even with a zero window, and the batch runner
 * flushes the deletes of each batch after its commit, as one {@code DeleteMessageBatch}.
 *
 * <p>Thread-safe.
 */
final class DeleteBatcher {
  private static final Logger LOG = LoggerFactory.getLogger(SqsIdempotentConsumer.class);
  static final int MAX_TRIES = 3;
  private static final String STALE_HANDLE = "ReceiptHandleIsInvalid";

  private final SqsClient sqs;
  private final String queueUrl;
  private final long windowNanos;
  private final boolean alwaysQueue;
  private final VisibilityKeeper keeper;
  private final List<Delivery> pending = new ArrayList<>();
  private long oldestNanos;
  private final AtomicLong deleted = new AtomicLong();
  private final AtomicLong failed = new AtomicLong();

  DeleteBatcher(SqsClient sqs, String queueUrl, Duration window, VisibilityKeeper keeper, boolean alwaysQueue) {
    this.sqs = sqs;
    this.queueUrl = queueUrl;
    this.windowNanos = window.toNanos();
    this.alwaysQueue = alwaysQueue;
    this.keeper = keeper;
  }

  /**
   * Deletes {@code delivery}: at once (window zero in per-message mode, failures thrown) or queued
   * for the next batch.
   *
   * @throws IdempotencyException with a zero window in per-message mode, when SQS refused the delete
   */
  void delete(Delivery delivery) {
    if (windowNanos == 0 && !alwaysQueue) {
      deleteNow(delivery);
      return;
    }
    boolean full;
    synchronized (this) {
      if (pending.isEmpty()) {
        oldestNanos = System.nanoTime();
      }
      pending.add(delivery);
      full = pending.size() >= SqsConsumerConfig.MAX_MESSAGES;
    }
    if (full) {
      flush();
    }
  }

  private void deleteNow(Delivery delivery) {
    delivery.deleting = true;
    try {
      sqs.deleteMessage(b -> b.queueUrl(queueUrl).receiptHandle(delivery.receiptHandle()));
      deleted.incrementAndGet();
    } catch (SdkException e) {
      failed.incrementAndGet();
      delivery.deleting = false;
      throw new IdempotencyException("could not delete " + delivery + " from " + queueUrl + ": "
          + e.getMessage(), e);
    } finally {
      keeper.forget(delivery);
    }
  }

  /** Flushes when the oldest queued delete has waited a full window. Runs on the timer thread. */
  void flushIfDue() {
    boolean due;
    synchronized (this) {
      due = !pending.isEmpty() && System.nanoTime() - oldestNanos >= windowNanos;
    }
    if (due) {
      flush();
    }
  }

  /** Sends every queued delete now and waits for the answers (a retried entry is sent again). */
  void flush() {
    for (int round = 0; round < MAX_TRIES; round++) {
      List<Delivery> batch;
      synchronized (this) {
        if (pending.isEmpty()) {
          return;
        }
        batch = new ArrayList<>(pending);
        pending.clear();
      }
      List<Delivery> again = new ArrayList<>();
      for (int from = 0; from < batch.size(); from += SqsConsumerConfig.MAX_MESSAGES) {
        again.addAll(send(batch.subList(from, Math.min(batch.size(), from + SqsConsumerConfig.MAX_MESSAGES))));
      }
      if (!again.isEmpty()) {
        synchronized (this) {
          if (pending.isEmpty()) {
            oldestNanos = System.nanoTime();
          }
          pending.addAll(again);
        }
      }
    }
  }

  synchronized int pendingCount() {
    return pending.size();
  }

  long deletedCount() {
    return deleted.get();
  }

  long failedCount() {
    return failed.get();
  }

  /** Sends one batch; returns the entries worth another try. */
  private List<Delivery> send(List<Delivery> batch) {
    List<DeleteMessageBatchRequestEntry> entries = new ArrayList<>();
    for (int i = 0; i < batch.size(); i++) {
      Delivery delivery = batch.get(i);
      delivery.deleting = true;
      delivery.deleteTries++;
      entries.add(DeleteMessageBatchRequestEntry.builder()
          .id(Integer.toString(i)).receiptHandle(delivery.receiptHandle()).build());
    }
    List<Delivery> again = new ArrayList<>();
    DeleteMessageBatchResponse response;
    try {
      response = sqs.deleteMessageBatch(b -> b.queueUrl(queueUrl).entries(entries));
    } catch (SdkException e) {
      for (Delivery delivery : batch) {
        retryOrGiveUp(delivery, "request failed: " + e, true, again);
      }
      return again;
    }
    response.successful().forEach(ok -> {
      Delivery delivery = batch.get(Integer.parseInt(ok.id()));
      deleted.incrementAndGet();
      keeper.forget(delivery);
    });
    for (BatchResultErrorEntry error : response.failed()) {
      Delivery delivery = batch.get(Integer.parseInt(error.id()));
      boolean transientFault = !Boolean.TRUE.equals(error.senderFault());
      retryOrGiveUp(delivery, error.code() + ": " + error.message(), transientFault, again);
    }
    return again;
  }

  private void retryOrGiveUp(Delivery delivery, String why, boolean transientFault, List<Delivery> again) {
    if (transientFault && delivery.deleteTries < MAX_TRIES) {
      LOG.warn("delete of {} from {} failed ({}); trying again", delivery, queueUrl, why);
      delivery.deleting = false;
      again.add(delivery);
      return;
    }
    failed.incrementAndGet();
    keeper.forget(delivery);
    if (why.startsWith(STALE_HANDLE)) {
      LOG.warn("delete of {} from {} refused ({}): its visibility ran out and it was received"
          + " again; that delivery settles it (the store skips it as a duplicate)", delivery, queueUrl, why);
    } else {
      LOG.error("could not delete {} from {} ({}); it was committed and will be delivered again,"
          + " then skipped as a duplicate", delivery, queueUrl, why);
    }
  }
}
