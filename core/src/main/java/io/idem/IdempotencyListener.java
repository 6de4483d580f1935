package io.idem;

import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * Hooks around each step of the pipeline, for metrics, logs, tracing and fault injection in crash
 * tests. Every method has an empty default. Methods run synchronously on the processing thread;
 * they must be quick and thread-safe. A {@link RuntimeException} from a listener is logged and
 * ignored: it never changes an outcome. An {@link Error} is not caught: it leaves
 * {@link IdempotentConsumer#process} — thrown inside the transaction it rolls it back — and the
 * adapter hands an unsettled message back to the broker after the backoff, leaves a settled one
 * as it was, and ends the worker only for a {@link VirtualMachineError} (docs/ADAPTERS.md, rule
 * 6). Crash tests use this to fail at a chosen step.
 *
 * <p>Order for a new key: {@link #onKey}, {@link #beforeClaim}, (handler),
 * {@link #afterHandler}, (commit), {@link #afterCommit}, (ack), {@link #onOutcome} — or, when
 * the ack threw, {@link #onAcknowledgementFailure} instead of {@link #onOutcome}. A retry:
 * {@link #onRetry}, (hand back), {@link #onOutcome}. A dead letter: (copy stored, original
 * removed), {@link #onDeadLetter}, {@link #onOutcome}.
 */
public interface IdempotencyListener {

  /** A key was extracted; {@code key.source()} tells whether it is a broker-id fallback. */
  default void onKey(InboundMessage message, IdempotencyKey key) {}

  /** About to open the transaction and claim the key. */
  default void beforeClaim(InboundMessage message, IdempotencyKey key) {}

  /** The handler returned; its writes and the marker are not committed yet. */
  default void afterHandler(InboundMessage message, IdempotencyKey key) {}

  /**
   * The transaction committed; the broker has not been told yet.
   *
   * @param pending the outcome about to be reported to the broker
   */
  default void afterCommit(InboundMessage message, IdempotencyKey key, ProcessingOutcome pending) {}

  /**
   * The transaction rolled back and the message will be processed again after {@code delay}.
   * Called by the pipeline only through {@link #onRetry(InboundMessage, IdempotencyKey,
   * ProcessingOutcome, Throwable, Duration)}, whose default calls this one.
   */
  default void onRetry(
      InboundMessage message, @Nullable IdempotencyKey key, Throwable failure, Duration delay) {}

  /**
   * The transaction rolled back and the message is handed back to be processed again after
   * {@code delay}; {@code kind} says who failed ({@link ProcessingOutcome#RETRY}: the handler, an
   * attempt counted; {@link ProcessingOutcome#RETRY_STORE_UNAVAILABLE}; {@link
   * ProcessingOutcome#RETRY_TRANSACTION}; {@link ProcessingOutcome#RELEASED}: shutdown). Called
   * before the acknowledgement is told. The default calls {@link #onRetry(InboundMessage,
   * IdempotencyKey, Throwable, Duration)}.
   */
  default void onRetry(
      InboundMessage message,
      @Nullable IdempotencyKey key,
      ProcessingOutcome kind,
      Throwable failure,
      Duration delay) {
    onRetry(message, key, failure, delay);
  }

  /**
   * The dead-letter copy of the message is stored with {@code reason} and the original removed
   * (the acknowledgement's {@code deadLetter} returned). Called once per stored copy: not when
   * storing the copy failed (the message then comes back and may be dead-lettered again later).
   */
  default void onDeadLetter(InboundMessage message, DeadLetterReason reason) {}

  /**
   * The broker was told; the delivery is settled (or, for a retry outcome, handed back).
   *
   * @param key the key, or {@code null} when none could be extracted
   * @param elapsed time from the start of {@link IdempotentConsumer#process} to now
   */
  default void onOutcome(
      InboundMessage message,
      @Nullable IdempotencyKey key,
      ProcessingOutcome outcome,
      Duration elapsed) {}

  /**
   * Telling the broker failed: the acknowledgement threw {@code failure} while settling the
   * delivery as {@code intended}. The delivery stays unsettled (the broker redelivers it and the
   * store deduplicates) and {@link IdempotentConsumer#process} rethrows the failure after this
   * call; {@link #onOutcome} is not called for this delivery.
   *
   * @param key the key, or {@code null} when none could be extracted
   * @param elapsed time from the start of {@link IdempotentConsumer#process} to now
   */
  default void onAcknowledgementFailure(
      InboundMessage message,
      @Nullable IdempotencyKey key,
      ProcessingOutcome intended,
      RuntimeException failure,
      Duration elapsed) {}
}
