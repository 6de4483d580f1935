package io.idem.sqs;

import java.time.Duration;

/**
 * One received message while this consumer holds it: from {@code ReceiveMessage} until it is
 * deleted, handed back, or given up. Tracks the visibility deadline this consumer knows of
 * (conservative: counted from just before the receive request was sent).
 *
 * <p>Thread-safe: the visibility fields are changed only while holding this object's monitor
 * (so a heartbeat extension cannot overtake a retry's {@code ChangeMessageVisibility}).
 */
final class Delivery {
  /** The message as the pipeline sees it; its attempt grows with each in-process retry. */
  volatile SqsInboundMessage message;
  /** SQS's {@code ApproximateReceiveCount} of this receive (what a {@code RedrivePolicy} counts). */
  final int receiveCount;
  private volatile long visibleUntilNanos;
  /** True while the heartbeat may extend it; cleared (under the monitor) when settled or handed back. */
  private boolean held = true;
  /** Set when its lane takes it; until then the poller may hand it back after a failure. */
  volatile boolean started;
  /** Set once its delete was sent; a failed heartbeat on it is then expected. */
  volatile boolean deleting;
  /** Delete attempts so far (guarded by the batcher). */
  int deleteTries;

  Delivery(SqsInboundMessage message, int receiveCount, long visibleUntilNanos) {
    this.message = message;
    this.receiveCount = receiveCount;
    this.visibleUntilNanos = visibleUntilNanos;
  }

  String messageId() {
    return message.brokerMessageId();
  }

  String receiptHandle() {
    return message.receiptHandle();
  }

  long remainingNanos(long nowNanos) {
    return visibleUntilNanos - nowNanos;
  }

  synchronized boolean held() {
    return held;
  }

  /** Marks it as no longer extended; returns whether it was held. */
  synchronized boolean unhold() {
    boolean was = held;
    held = false;
    return was;
  }

  /** Caller holds the monitor. */
  void extendedAt(long sentNanos, Duration visibility) {
    visibleUntilNanos = sentNanos + visibility.toNanos();
  }

  /** The next attempt, run in process without a new receive (a FIFO head retried before its group's tail). */
  void nextAttempt(AttemptLedger ledger) {
    ledger.ranAgain(messageId());
    message = message.withDeliveryAttempt(message.deliveryAttempt() + 1);
  }

  @Override
  public String toString() {
    return "message " + messageId() + " (attempt " + message.deliveryAttempt() + ")";
  }
}
