package io.idem.internal;

import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import io.idem.IdempotencyKey;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.spi.DeadLetterDecision;
import io.idem.spi.ProcessedEventStore;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The pipeline's side of {@link ProcessedEventStore#recordDeadLetter}: the decision committed
 * before the copy is stored, and read back when a duplicate claim may be a dead-lettered message
 * come back (a CONFLICT claim: docs/FAILURES.md, "Dead-lettering twice"). A store failure here never stops a dead
 * letter: recording is worth having, not worth holding a message for. Thread-safe.
 */
final class DeadLetterRecords {
  private static final Logger LOG = LoggerFactory.getLogger(IdempotentConsumer.class);

  /** A store whose decisions are not recorded ({@code naturallyIdempotent}: no markers at all). */
  static final DeadLetterRecords NONE = new DeadLetterRecords(null);

  private final @Nullable ProcessedEventStore<?> store;

  DeadLetterRecords(@Nullable ProcessedEventStore<?> store) {
    this.store = store;
  }

  /**
   * Records the decision before the copy; keyless messages have no marker to write, and a
   * CONFLICT's key already has the marker of the message that was applied.
   */
  void record(InboundMessage message, @Nullable IdempotencyKey key, DeadLetterReason reason) {
    if (store == null || key == null || reason.cause() == DeadLetterCause.CONFLICT) {
      return;
    }
    try {
      boolean recorded =
          store.recordDeadLetter(key, DeadLetterDecision.of(reason, message.brokerMessageId()));
      LOG.debug("dead-letter decision for key '{}' {}", key.value(),
          recorded ? "recorded" : "not recorded (the store keeps none, or the key was processed)");
    } catch (RuntimeException e) {
      LOG.warn("dead-letter decision for key '{}' of {} not recorded (a crash before the original is"
          + " removed would process it again): {}", key.value(), message.source(),
          FailureText.oneLine(e));
    }
  }

  /**
   * The decision recorded for {@code key}, or {@code null}; a failing read is taken as none (the
   * duplicate path as before), logged.
   */
  @Nullable DeadLetterDecision find(InboundMessage message, IdempotencyKey key) {
    if (store == null) {
      return null;
    }
    try {
      return store.deadLetterDecision(key);
    } catch (RuntimeException e) {
      LOG.warn("could not read the dead-letter decision for key '{}' of {}; settled as the claim"
          + " said: {}", key.value(), message.source(), FailureText.oneLine(e));
      return null;
    }
  }

  /** Removes the decision so that a replay is processed anew; whether it was removed. */
  boolean release(IdempotencyKey key, DeadLetterDecision decision) {
    return store != null && store.releaseDeadLetter(key, decision.brokerMessageId());
  }
}
