package io.idem.internal;

import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import io.idem.IdempotencyKey;
import io.idem.IdempotencyKeyExtractor;
import io.idem.IdempotencyListener;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.KeyExtraction;
import io.idem.KeySource;
import io.idem.KeyedMessageHandler;
import io.idem.OversizedKeyPolicy;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.StoreUnavailableException;
import io.idem.spi.Acknowledgement;
import io.idem.spi.ClaimResult;
import io.idem.spi.ProcessedEventStore;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The pipeline described on {@link IdempotentConsumer}. */
public final class DefaultIdempotentConsumer<C> implements IdempotentConsumer<C> {
  private static final Logger LOG = LoggerFactory.getLogger(IdempotentConsumer.class);

  private final ProcessedEventStore<C> store;
  private final String consumerGroup;
  private final KeyedMessageHandler<C> handler;
  private final IdempotencyKeyExtractor keyExtractor;
  private final RetryPolicy retryPolicy;
  private final OversizedKeyPolicy oversizedKeys;
  private final boolean detectPayloadConflicts;
  private final IdempotencyListener listener;
  private final AtomicLong brokerIdFallbacks = new AtomicLong();
  private final AtomicInteger consecutiveStoreFailures = new AtomicInteger();

  public DefaultIdempotentConsumer(
      ProcessedEventStore<C> store,
      String consumerGroup,
      KeyedMessageHandler<C> handler,
      IdempotencyKeyExtractor keyExtractor,
      RetryPolicy retryPolicy,
      OversizedKeyPolicy oversizedKeys,
      boolean detectPayloadConflicts,
      List<IdempotencyListener> listeners) {
    this.store = store;
    this.consumerGroup = consumerGroup;
    this.handler = handler;
    this.keyExtractor = keyExtractor;
    this.retryPolicy = retryPolicy;
    this.oversizedKeys = oversizedKeys;
    this.detectPayloadConflicts = detectPayloadConflicts;
    this.listener = new Listeners(listeners);
  }

  @Override
  public String consumerGroup() {
    return consumerGroup;
  }

  @Override
  public RetryPolicy retryPolicy() {
    return retryPolicy;
  }

  @Override
  public ProcessingOutcome process(InboundMessage message, Acknowledgement acknowledgement) {
    long start = System.nanoTime();
    KeyOrReason keyed = key(message);
    if (keyed.key == null) {
      DeadLetterReason reason =
          new DeadLetterReason(
              keyed.cause, keyed.reason, consumerGroup, null, message.deliveryAttempt(), null);
      return deadLetter(message, null, reason, acknowledgement, start);
    }
    IdempotencyKey key = keyed.key;
    listener.onKey(message, key);
    if (key.source() == KeySource.BROKER_ID) {
      noteFallback(message, key);
    }

    byte[] fingerprint = Fingerprints.sha256(message.payload());
    listener.beforeClaim(message, key);
    ClaimResult claim;
    try {
      claim = store.inTransaction(tx -> claimAndHandle(tx, message, key, fingerprint));
    } catch (StoreUnavailableException e) {
      return storeUnavailable(message, key, e, acknowledgement, start);
    } catch (Exception e) {
      return handlerFailed(message, key, e, acknowledgement, start);
    } catch (VirtualMachineError e) {
      if (!(e instanceof StackOverflowError)) {
        throw e; // out of memory or a broken VM: nothing sensible to decide about the message
      }
      return handlerFailed(message, key, e, acknowledgement, start);
    } catch (Error e) {
      // AssertionError, NoClassDefFoundError, …: the handler failed like any other failure
      return handlerFailed(message, key, e, acknowledgement, start);
    }
    storeRecovered();

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
      listener.onDeadLetter(message, reason);
      acknowledgement.deadLetter(reason);
      return finish(message, key, ProcessingOutcome.CONFLICT, start);
    }
    if (pending == ProcessingOutcome.DUPLICATE) {
      LOG.debug("duplicate key '{}' on {} skipped", key.value(), message.source());
    }
    acknowledgement.ack();
    return finish(message, key, pending, start);
  }

  /**
   * The store failed: roll back (done), retry after a backoff that grows with the number of
   * consecutive store failures of this pipeline (not with the message's own attempts, which an
   * adapter keeping the delivery does not raise), and log the outage once per doubling.
   */
  private ProcessingOutcome storeUnavailable(
      InboundMessage message,
      IdempotencyKey key,
      StoreUnavailableException e,
      Acknowledgement acknowledgement,
      long start) {
    int failures = consecutiveStoreFailures.incrementAndGet();
    Duration delay = retryPolicy.backoff(failures);
    if (Integer.bitCount(failures) == 1) {
      LOG.warn(
          "store unavailable ({} consecutive failed transaction(s)); key '{}' of {} rolled back,"
              + " retry in {} ms: {}",
          failures, key.value(), message.source(), delay.toMillis(), rootMessage(e));
    } else {
      LOG.debug("store unavailable; key '{}' of {} retry in {} ms", key.value(), message.source(),
          delay.toMillis(), e);
    }
    listener.onRetry(message, key, e, delay);
    acknowledgement.retryWhenStoreAvailable(delay);
    return finish(message, key, ProcessingOutcome.RETRY, start);
  }

  private void storeRecovered() {
    int failures = consecutiveStoreFailures.get();
    if (failures > 0 && consecutiveStoreFailures.compareAndSet(failures, 0)) {
      LOG.info("store available again after {} failed transaction(s)", failures);
    }
  }

  private ClaimResult claimAndHandle(
      C tx, InboundMessage message, IdempotencyKey key, byte[] fingerprint) throws Exception {
    ClaimResult claim;
    try {
      claim = store.claim(tx, key, fingerprint);
    } catch (StoreUnavailableException e) {
      throw e;
    } catch (RuntimeException e) {
      // A failing claim is never the message's fault (missing table, permissions, outage):
      // retry it, never dead-letter good messages for it.
      throw new StoreUnavailableException("claim of key '" + key.value() + "' failed: " + e, e);
    }
    if (claim == ClaimResult.CLAIMED) {
      handler.handle(key, message, tx);
      // the handler may have swallowed a database error (the transaction is then aborted and
      // its commit would silently roll back) or ended the transaction itself
      store.confirmClaim(tx, key);
      listener.afterHandler(message, key);
    }
    return claim;
  }

  private ProcessingOutcome handlerFailed(
      InboundMessage message,
      IdempotencyKey key,
      Throwable failure,
      Acknowledgement acknowledgement,
      long start) {
    int attempt = message.deliveryAttempt();
    boolean retryable = retryPolicy.isRetryable(failure);
    if (retryable && retryPolicy.hasAttemptsLeft(attempt)) {
      Duration delay = retryPolicy.backoff(attempt);
      LOG.warn(
          "handler failed for key '{}' of {} (attempt {} of {}); rolled back, retry in {} ms",
          key.value(), message.source(), attempt, retryPolicy.maxAttempts(), delay.toMillis(),
          failure);
      listener.onRetry(message, key, failure, delay);
      acknowledgement.retry(delay);
      return finish(message, key, ProcessingOutcome.RETRY, start);
    }
    DeadLetterReason reason =
        new DeadLetterReason(
            retryable ? DeadLetterCause.MAX_ATTEMPTS_EXCEEDED : DeadLetterCause.NON_RETRYABLE,
            (retryable
                    ? "handler failed on attempt " + attempt + " of " + retryPolicy.maxAttempts()
                    : "handler failed with a non-retryable error on attempt " + attempt)
                + ": " + failure,
            consumerGroup,
            key.value(),
            attempt,
            failure.getClass().getName());
    LOG.error("dead-lettering key '{}' of {}: {}", key.value(), message.source(), reason, failure);
    listener.onDeadLetter(message, reason);
    acknowledgement.deadLetter(reason);
    return finish(message, key, ProcessingOutcome.DEAD_LETTERED, start);
  }

  private ProcessingOutcome deadLetter(
      InboundMessage message,
      @Nullable IdempotencyKey key,
      DeadLetterReason reason,
      Acknowledgement acknowledgement,
      long start) {
    String id = message.brokerMessageId();
    LOG.warn("dead-lettering a message of {}{}: {}", message.source(),
        id == null ? "" : " (broker id " + id + ")", reason);
    listener.onDeadLetter(message, reason);
    acknowledgement.deadLetter(reason);
    return finish(message, key, ProcessingOutcome.DEAD_LETTERED, start);
  }

  private ProcessingOutcome finish(
      InboundMessage message, @Nullable IdempotencyKey key, ProcessingOutcome outcome, long start) {
    listener.onOutcome(message, key, outcome, Duration.ofNanos(System.nanoTime() - start));
    return outcome;
  }

  private void noteFallback(InboundMessage message, IdempotencyKey key) {
    long count = brokerIdFallbacks.incrementAndGet();
    if (count == 1 || Long.bitCount(count) == 1) {
      // powers of two: visible in the log without flooding it
      LOG.warn(
          "consumer group '{}' keyed {} message(s) by broker message id (fallback), latest {} on"
              + " {}: a producer retry or re-publish carries a new broker id and will be applied"
              + " again; have producers set a business key",
          consumerGroup, count, key.value(), message.source());
    } else {
      LOG.debug("broker-id fallback key {} on {}", key.value(), message.source());
    }
  }

  /** Number of keys taken from broker message ids since this pipeline was built. */
  public long brokerIdFallbacks() {
    return brokerIdFallbacks.get();
  }

  private KeyOrReason key(InboundMessage message) {
    KeyExtraction extraction = ChainedKeyExtractor.extractSafely(keyExtractor, message);
    if (extraction instanceof KeyExtraction.Absent absent) {
      return KeyOrReason.reason(DeadLetterCause.NO_KEY, absent.detail());
    }
    if (extraction instanceof KeyExtraction.Rejected rejected) {
      return KeyOrReason.reason(DeadLetterCause.INVALID_KEY, rejected.reason());
    }
    KeyExtraction.Found found = (KeyExtraction.Found) extraction;
    String value = found.value();
    if (value.length() > IdempotencyKey.MAX_LENGTH && oversizedKeys == OversizedKeyPolicy.HASH) {
      // the content rules (no NUL, no unpaired surrogate) hold for a key about to be hashed too
      String problem = IdempotencyKey.problemWithContent(value);
      if (problem != null) {
        return KeyOrReason.reason(DeadLetterCause.INVALID_KEY, found.origin() + ": " + problem);
      }
      value = Fingerprints.hashedKey(value);
    }
    String problem = IdempotencyKey.problemWith(value);
    if (problem != null) {
      return KeyOrReason.reason(DeadLetterCause.INVALID_KEY, found.origin() + ": " + problem);
    }
    return KeyOrReason.key(new IdempotencyKey(consumerGroup, value, found.source()));
  }

  /** The innermost cause, on one line (MyBatis wraps SQL errors in multi-line messages). */
  private static String rootMessage(Throwable e) {
    Throwable root = e;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    String text = root.getClass().getSimpleName() + ": " + root.getMessage();
    int end = text.indexOf('\n');
    return end < 0 ? text : text.substring(0, end);
  }

  private record KeyOrReason(
      @Nullable IdempotencyKey key, DeadLetterCause cause, String reason) {
    static KeyOrReason key(IdempotencyKey key) {
      return new KeyOrReason(key, DeadLetterCause.NO_KEY, "");
    }

    static KeyOrReason reason(DeadLetterCause cause, String reason) {
      return new KeyOrReason(null, cause, reason);
    }
  }

  @Override
  public String toString() {
    return "IdempotentConsumer[group=" + consumerGroup + ", keys=" + keyExtractor + ", " + retryPolicy + "]";
  }
}
