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
  final SqsInboundMessage message;
  private volatile long visibleUntilNanos;
  /** True while the heartbeat may extend it; cleared (under the monitor) when settled or handed back. */
  private boolean held = true;
  /** Set when its lane takes it; until then the poller may hand it back after a failure. */
  volatile boolean started;
  /** Set once its delete was sent; a failed heartbeat on it is then expected. */
  volatile boolean deleting;
  /** Delete attempts so far (guarded by the batcher). */
  int deleteTries;

  Delivery(SqsInboundMessage message, long visibleUntilNanos) {
    this.message = message;
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

  @Override
  public String toString() {
    return "message " + messageId() + " (attempt " + message.deliveryAttempt() + ")";
  }
}
