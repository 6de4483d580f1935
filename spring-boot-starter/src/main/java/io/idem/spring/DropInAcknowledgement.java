package io.idem.spring;

import io.idem.DeadLetterReason;
import io.idem.spi.Acknowledgement;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * The pipeline's settlement of one drop-in delivery: acks are the container's (after the method
 * returns), retries are remembered for the interceptor ({@link #delay()}), dead letters are copied
 * at once through the kind ({@link ListenerDeliveries#deadLetter}). Confined to the listener thread.
 */
final class DropInAcknowledgement implements Acknowledgement {
  private final ListenerDeliveries kind;
  private final Object message;
  private final @Nullable String deadLetter;
  private Duration delay = Duration.ZERO;
  private boolean deadLettered;
  private boolean acked;

  DropInAcknowledgement(ListenerDeliveries kind, Object message, @Nullable String deadLetter) {
    this.kind = kind;
    this.message = message;
    this.deadLetter = deadLetter;
  }

  /** The backoff the pipeline asked for with its retry outcome. */
  Duration delay() {
    return delay;
  }

  /** Whether the dead-letter copy was stored. */
  boolean deadLettered() {
    return deadLettered;
  }

  /** Whether the pipeline settled the delivery: acked (the container acks it) or dead-lettered. */
  boolean settled() {
    return acked || deadLettered;
  }

  @Override
  public void ack() {
    acked = true;
    // the container acknowledges when the listener method returns, after Idem's commit
  }

  @Override
  public void retry(Duration value) {
    delay = value;
  }

  @Override
  public void retryWhenStoreAvailable(Duration value) {
    delay = value;
  }

  @Override
  public void release() {
    delay = Duration.ZERO;
  }

  @Override
  public void deadLetter(DeadLetterReason reason) {
    kind.deadLetter(message, reason, deadLetter);
    deadLettered = true;
  }
}
