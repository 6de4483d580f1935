package io.idem.internal;

import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.StoreUnavailableException;
import io.idem.TransactionRetryException;
import io.idem.internal.Keys.KeyOrReason;
import io.idem.spi.Acknowledgement;
import io.idem.spi.ClaimResult;
import io.idem.spi.DeadLetterDecision;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The end of a message's way through the pipeline, one message or a batch: tells the broker the
 * outcome through its {@link Acknowledgement}, then the listeners (docs/FAILURES.md). Thread-safe.
 */
final class Settlement {
  // the pipeline's logger, so that its lines keep one category whichever class writes them
  private static final Logger LOG = LoggerFactory.getLogger(IdempotentConsumer.class);

  /** Upper bound of the random delay before a {@link ProcessingOutcome#RETRY_TRANSACTION}: 100 ms. */
  static final Duration TRANSACTION_RETRY_DELAY_CAP = Duration.ofMillis(100);

  private final String consumerGroup;
  private final RetryPolicy retryPolicy;
  private final boolean detectPayloadConflicts;
  private final IdempotencyListener listener;
  private final OutageTracker outages;
  private final DeadLetterRecords deadLetters;
  /** The per-message pipeline, for a replay whose key's dead-letter decision was released. */
  private final BatchProcessor.OneByOne reprocess;

  Settlement(String consumerGroup, RetryPolicy retryPolicy, boolean detectPayloadConflicts,
      IdempotencyListener listener, OutageTracker outages, DeadLetterRecords deadLetters,
      BatchProcessor.OneByOne reprocess) {
    this.consumerGroup = consumerGroup;
    this.retryPolicy = retryPolicy;
    this.detectPayloadConflicts = detectPayloadConflicts;
    this.listener = listener;
    this.outages = outages;
    this.deadLetters = deadLetters;
    this.reprocess = reprocess;
  }

  /** After the commit: tells the broker what the claim decided, and the listeners. */
  ProcessingOutcome settle(
      InboundMessage message,
      IdempotencyKey key,
      ClaimResult claim,
      Acknowledgement acknowledgement,
      long start) {
    if (claim == ClaimResult.CONFLICT) { // a dead-letter marker answers CONFLICT to every claim
      DeadLetterDecision decision = deadLetters.find(message, key);
      if (decision != null) {
        return decided(message, key, decision, acknowledgement, start);
      }
    }
    ProcessingOutcome pending = switch (claim) {
      case CLAIMED -> ProcessingOutcome.PROCESSED;
      case DUPLICATE -> ProcessingOutcome.DUPLICATE;
      case CONFLICT -> detectPayloadConflicts ? ProcessingOutcome.CONFLICT : ProcessingOutcome.DUPLICATE;
    };
    listener.afterCommit(message, key, pending);
    if (pending == ProcessingOutcome.CONFLICT) {
      DeadLetterReason reason =
          new DeadLetterReason(
              DeadLetterCause.CONFLICT,
              "idempotency key '" + key.value() + "' was already processed by consumer group '"
                  + consumerGroup + "' with a different payload (SHA-256 differs); not applied",
              consumerGroup,
              key.value(),
              message.deliveryAttempt(),
              null);
      LOG.warn("conflict on {}: {}", message.source(), reason.detail());
      return deadLetter(message, key, reason, acknowledgement, start);
    }
    if (pending == ProcessingOutcome.DUPLICATE) {
      LOG.debug("duplicate key '{}' on {} skipped", key.value(), message.source());
    }
    tell(message, key, pending, start, acknowledgement::ack);
    return finish(message, key, pending, start);
  }

  /**
   * The key's marker is a dead-letter decision (docs/FAILURES.md, "Dead-lettering twice"): the
   * same delivery come back after a crash between the copy and the removal of the original is
   * dead-lettered again with the recorded reason, never handled; a new message with the key (a
   * replay from the dead-letter destination) releases the decision and is processed anew.
   */
  private ProcessingOutcome decided(
      InboundMessage message,
      IdempotencyKey key,
      DeadLetterDecision decision,
      Acknowledgement acknowledgement,
      long start) {
    if (decision.sameDelivery(message.brokerMessageId())) {
      DeadLetterReason reason =
          new DeadLetterReason(
              decision.cause(),
              decision.detail(),
              consumerGroup,
              key.value(),
              message.deliveryAttempt(),
              decision.exceptionClass());
      LOG.warn("key '{}' of {} was already dead-lettered{}; its copy stored again, not handled: {}",
          key.value(), message.source(), message.brokerMessageId() == null ? ""
              : " (broker id " + message.brokerMessageId() + ")", reason);
      listener.afterCommit(message, key, ProcessingOutcome.DEAD_LETTERED);
      return deadLetter(message, key, reason, acknowledgement, start, false);
    }
    try {
      deadLetters.release(key, decision);
    } catch (StoreUnavailableException e) {
      return storeUnavailable(message, key, e, acknowledgement, start,
          outageDelay("dead-letter decision of key '" + key.value() + "' not released", e));
    } catch (RuntimeException e) {
      StoreUnavailableException wrapped = new StoreUnavailableException(
          "releasing the dead-letter decision of key '" + key.value() + "' failed: " + e, e);
      return storeUnavailable(message, key, wrapped, acknowledgement, start,
          outageDelay("dead-letter decision of key '" + key.value() + "' not released", wrapped));
    }
    LOG.info("key '{}' of {} (broker id {}) was dead-lettered as broker id {}: a replay, processed"
        + " anew", key.value(), message.source(), message.brokerMessageId(),
        decision.brokerMessageId());
    return reprocess.process(
        message, key, Fingerprints.sha256(message.payload()), acknowledgement, start);
  }

  /** Dead-letters a message without a valid key (NO_KEY / INVALID_KEY); the store is not touched. */
  ProcessingOutcome deadLetterKeyless(
      InboundMessage message, KeyOrReason keyed, Acknowledgement acknowledgement, long start) {
    DeadLetterReason reason =
        new DeadLetterReason(
            keyed.cause(), keyed.reason(), consumerGroup, null, message.deliveryAttempt(), null);
    String id = message.brokerMessageId();
    LOG.warn("dead-lettering a message of {}{}: {}", message.source(),
        id == null ? "" : " (broker id " + id + ")", reason);
    return deadLetter(message, null, reason, acknowledgement, start);
  }

  /**
   * Records the decision in the store (a keyed message's, not a CONFLICT's), then stores the
   * dead-letter copy through the acknowledgement; the listeners hear of it once the copy is stored
   * (once per stored copy, not once per try).
   */
  ProcessingOutcome deadLetter(
      InboundMessage message,
      @Nullable IdempotencyKey key,
      DeadLetterReason reason,
      Acknowledgement acknowledgement,
      long start) {
    return deadLetter(message, key, reason, acknowledgement, start, true);
  }

  private ProcessingOutcome deadLetter(
      InboundMessage message,
      @Nullable IdempotencyKey key,
      DeadLetterReason reason,
      Acknowledgement acknowledgement,
      long start,
      boolean record) {
    if (record) {
      deadLetters.record(message, key, reason); // committed before the copy is stored
    }
    ProcessingOutcome outcome = reason.cause() == DeadLetterCause.CONFLICT
        ? ProcessingOutcome.CONFLICT
        : ProcessingOutcome.DEAD_LETTERED;
    tell(message, key, outcome, start, () -> acknowledgement.deadLetter(reason));
    listener.onDeadLetter(message, reason);
    return finish(message, key, outcome, start);
  }

  /**
   * The consumer is closing and interrupted the work: not the message's failure. Hand it back
   * unacknowledged without using an attempt, and set the interrupt flag again for the caller.
   */
  ProcessingOutcome released(
      InboundMessage message,
      IdempotencyKey key,
      Throwable failure,
      Acknowledgement acknowledgement,
      long start) {
    Thread.currentThread().interrupt();
    LOG.info("key '{}' of {} interrupted by shutdown; rolled back and handed back unacknowledged",
        key.value(), message.source());
    listener.onRetry(message, key, ProcessingOutcome.RELEASED, failure, Duration.ZERO);
    tell(message, key, ProcessingOutcome.RELEASED, start, acknowledgement::release);
    return finish(message, key, ProcessingOutcome.RELEASED, start);
  }

  /**
   * The store could not reach the database: roll back (done), retry after a backoff that grows
   * with the number of consecutive store failures of this pipeline (not with the message's own
   * attempts, which do not move), and keep the outage visible.
   */
  ProcessingOutcome storeUnavailable(
      InboundMessage message,
      IdempotencyKey key,
      StoreUnavailableException e,
      Acknowledgement acknowledgement,
      long start,
      Duration delay) {
    listener.onRetry(message, key, ProcessingOutcome.RETRY_STORE_UNAVAILABLE, e, delay);
    tell(message, key, ProcessingOutcome.RETRY_STORE_UNAVAILABLE, start,
        () -> acknowledgement.retryWhenStoreAvailable(delay));
    return finish(message, key, ProcessingOutcome.RETRY_STORE_UNAVAILABLE, start);
  }

  /** Counts one failed transaction as an outage and returns its backoff. */
  Duration outageDelay(String what, StoreUnavailableException e) {
    Duration delay = retryPolicy.backoff(outages.health().consecutiveFailures() + 1);
    outages.failed(what + ", retry in " + delay.toMillis() + " ms", FailureText.oneLine(e));
    return delay;
  }

  /**
   * PostgreSQL asked for the transaction to be retried (40001, 40P01) or the claim waited too long
   * behind another instance: not an attempt; retried after a short random delay (0 to 100 ms,
   * never more than the policy's initial backoff) so that the racers do not meet again.
   */
  ProcessingOutcome transactionRetry(
      InboundMessage message,
      IdempotencyKey key,
      TransactionRetryException e,
      Acknowledgement acknowledgement,
      long start,
      Duration delay) {
    LOG.info("transaction for key '{}' of {} rolled back, retried in {} ms (not an attempt): {}",
        key.value(), message.source(), delay.toMillis(), FailureText.oneLine(e));
    listener.onRetry(message, key, ProcessingOutcome.RETRY_TRANSACTION, e, delay);
    tell(message, key, ProcessingOutcome.RETRY_TRANSACTION, start,
        () -> acknowledgement.retryWhenStoreAvailable(delay));
    return finish(message, key, ProcessingOutcome.RETRY_TRANSACTION, start);
  }

  /** 0 to 100 ms at random, never more than the policy's initial backoff. */
  Duration transactionRetryDelay() {
    long capMillis =
        Math.min(TRANSACTION_RETRY_DELAY_CAP.toMillis(), retryPolicy.initialBackoff().toMillis());
    return Duration.ofMillis(capMillis <= 0 ? 0 : ThreadLocalRandom.current().nextLong(capMillis + 1));
  }

  /**
   * Tells the broker; when the acknowledgement throws, reports it to the listeners (the delivery
   * stays unsettled) and rethrows.
   */
  void tell(
      InboundMessage message,
      @Nullable IdempotencyKey key,
      ProcessingOutcome intended,
      long start,
      Runnable call) {
    try {
      call.run();
    } catch (RuntimeException e) {
      listener.onAcknowledgementFailure(
          message, key, intended, e, Duration.ofNanos(System.nanoTime() - start));
      throw e;
    }
  }

  /** Tells the listeners the outcome and returns it. */
  ProcessingOutcome finish(
      InboundMessage message, @Nullable IdempotencyKey key, ProcessingOutcome outcome, long start) {
    listener.onOutcome(message, key, outcome, Duration.ofNanos(System.nanoTime() - start));
    return outcome;
  }
}
