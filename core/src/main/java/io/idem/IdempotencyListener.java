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
 * {@link #afterHandler}, (commit), {@link #afterCommit}, (ack), {@link #onOutcome}.
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

  /** The transaction rolled back and the message will be redelivered after {@code delay}. */
  default void onRetry(
      InboundMessage message, @Nullable IdempotencyKey key, Throwable failure, Duration delay) {}

  /** The message is about to be dead-lettered with {@code reason}. */
  default void onDeadLetter(InboundMessage message, DeadLetterReason reason) {}

  /**
   * The broker was told; the delivery is settled.
   *
   * @param key the key, or {@code null} when none could be extracted
   * @param elapsed time from the start of {@link IdempotentConsumer#process} to now
   */
  default void onOutcome(
      InboundMessage message,
      @Nullable IdempotencyKey key,
      ProcessingOutcome outcome,
      Duration elapsed) {}
}
