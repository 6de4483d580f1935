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
import io.idem.StoreHealth;
import io.idem.StoreUnavailableException;
import io.idem.TransactionRetryException;
import io.idem.spi.Acknowledgement;
import io.idem.spi.ClaimResult;
import io.idem.spi.ProcessedEventStore;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The pipeline described on {@link IdempotentConsumer}; failures are classified once, here, by
 * who failed (docs/FAILURES.md).
 */
public final class DefaultIdempotentConsumer<C> implements IdempotentConsumer<C> {
  private static final Logger LOG = LoggerFactory.getLogger(IdempotentConsumer.class);

  /** Upper bound of the random delay before a {@link ProcessingOutcome#RETRY_TRANSACTION}: 100 ms. */
  static final Duration TRANSACTION_RETRY_DELAY_CAP = Duration.ofMillis(100);

  private final ProcessedEventStore<C> store;
  private final String consumerGroup;
  private final KeyedMessageHandler<C> handler;
  private final IdempotencyKeyExtractor keyExtractor;
  private final RetryPolicy retryPolicy;
  private final OversizedKeyPolicy oversizedKeys;
  private final boolean detectPayloadConflicts;
  private final IdempotencyListener listener;
  private final OutageTracker outages;
  private final AtomicLong brokerIdFallbacks = new AtomicLong();

  public DefaultIdempotentConsumer(
      ProcessedEventStore<C> store,
      String consumerGroup,
      KeyedMessageHandler<C> handler,
      IdempotencyKeyExtractor keyExtractor,
      RetryPolicy retryPolicy,
      OversizedKeyPolicy oversizedKeys,
      boolean detectPayloadConflicts,
      List<IdempotencyListener> listeners,
      Duration outageErrorAfter) {
    this.store = store;
    this.consumerGroup = consumerGroup;
    this.handler = handler;
    this.keyExtractor = keyExtractor;
    this.retryPolicy = retryPolicy;
    this.oversizedKeys = oversizedKeys;
    this.detectPayloadConflicts = detectPayloadConflicts;
    this.listener = new Listeners(listeners);
    this.outages = new OutageTracker(LOG, outageErrorAfter, Clock.systemUTC());
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
  public StoreHealth storeHealth() {
    return outages.health();
  }

  @Override
  public ProcessingOutcome process(InboundMessage message, Acknowledgement acknowledgement) {
    long start = System.nanoTime();
    KeyOrReason keyed = key(message);
    if (keyed.key == null) {
      DeadLetterReason reason =
          new DeadLetterReason(
              keyed.cause, keyed.reason, consumerGroup, null, message.deliveryAttempt(), null);
      String id = message.brokerMessageId();
      LOG.warn("dead-lettering a message of {}{}: {}", message.source(),
          id == null ? "" : " (broker id " + id + ")", reason);
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
    } catch (Exception e) {
      return failed(message, key, e, acknowledgement, start);
    } catch (VirtualMachineError e) {
      if (!(e instanceof StackOverflowError)) {
        throw e; // out of memory or a broken VM: nothing sensible to decide about the message
      }
      return failed(message, key, e, acknowledgement, start);
    } catch (Error e) {
      // AssertionError, NoClassDefFoundError, …: the handler failed like any other failure
      return failed(message, key, e, acknowledgement, start);
    }
    outages.reached();

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
   * Classifies a failed transaction once, by who failed (docs/FAILURES.md): shutdown, the store's
   * own connection, a transaction retry asked by the database, or else the handler.
   */
  private ProcessingOutcome failed(
      InboundMessage message,
      IdempotencyKey key,
      Throwable failure,
      Acknowledgement acknowledgement,
      long start) {
    if (Interruption.isShutdown(failure)) {
      return released(message, key, failure, acknowledgement, start);
    }
    if (failure instanceof StoreUnavailableException e) {
      return storeUnavailable(message, key, e, acknowledgement, start);
    }
    outages.reached(); // the database answered
    if (failure instanceof TransactionRetryException e) {
      return transactionRetry(message, key, e, acknowledgement, start);
    }
    return handlerFailed(message, key, failure, acknowledgement, start);
  }

  /**
   * The consumer is closing and interrupted the work: not the message's failure. Hand it back
   * unacknowledged without using an attempt, and set the interrupt flag again for the caller.
   */
  private ProcessingOutcome released(
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
  private ProcessingOutcome storeUnavailable(
      InboundMessage message,
      IdempotencyKey key,
      StoreUnavailableException e,
      Acknowledgement acknowledgement,
      long start) {
    Duration delay = retryPolicy.backoff(outages.health().consecutiveFailures() + 1);
    outages.failed("key '" + key.value() + "' of " + message.source() + " not processed, retry in "
        + delay.toMillis() + " ms", oneLine(e));
    listener.onRetry(message, key, ProcessingOutcome.RETRY_STORE_UNAVAILABLE, e, delay);
    tell(message, key, ProcessingOutcome.RETRY_STORE_UNAVAILABLE, start,
        () -> acknowledgement.retryWhenStoreAvailable(delay));
    return finish(message, key, ProcessingOutcome.RETRY_STORE_UNAVAILABLE, start);
  }

  /**
   * PostgreSQL asked for the transaction to be retried (40001, 40P01) or the claim waited too long
   * behind another instance: not an attempt; retried after a short random delay (0 to 100 ms,
   * never more than the policy's initial backoff) so that the racers do not meet again.
   */
  private ProcessingOutcome transactionRetry(
      InboundMessage message,
      IdempotencyKey key,
      TransactionRetryException e,
      Acknowledgement acknowledgement,
      long start) {
    long capMillis =
        Math.min(TRANSACTION_RETRY_DELAY_CAP.toMillis(), retryPolicy.initialBackoff().toMillis());
    Duration delay =
        Duration.ofMillis(capMillis <= 0 ? 0 : ThreadLocalRandom.current().nextLong(capMillis + 1));
    LOG.info("transaction for key '{}' of {} rolled back, retried in {} ms (not an attempt): {}",
        key.value(), message.source(), delay.toMillis(), oneLine(e));
    listener.onRetry(message, key, ProcessingOutcome.RETRY_TRANSACTION, e, delay);
    tell(message, key, ProcessingOutcome.RETRY_TRANSACTION, start,
        () -> acknowledgement.retryWhenStoreAvailable(delay));
    return finish(message, key, ProcessingOutcome.RETRY_TRANSACTION, start);
  }

  private ClaimResult claimAndHandle(
      C tx, InboundMessage message, IdempotencyKey key, byte[] fingerprint) throws Exception {
    ClaimResult claim;
    try {
      claim = store.claim(tx, key, fingerprint);
    } catch (StoreUnavailableException | TransactionRetryException e) {
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
    // dead-letter at the lower of the policy's and the broker's limit, so the broker never acts first
    int brokerLimit = message.brokerAttemptLimit();
    int maxAttempts = Math.min(retryPolicy.maxAttempts(), brokerLimit);
    if (retryable && attempt < maxAttempts) {
      Duration delay = retryPolicy.backoff(attempt);
      String what = "handler failed for key '" + key.value() + "' of " + message.source()
          + " (attempt " + attempt + " of " + maxAttempts + "); rolled back, retry in "
          + delay.toMillis() + " ms";
      if (LOG.isDebugEnabled()) {
        LOG.warn(what, failure); // the stack trace only at DEBUG: a failing handler repeats
      } else {
        LOG.warn("{}: {}", what, oneLine(failure));
      }
      listener.onRetry(message, key, ProcessingOutcome.RETRY, failure, delay);
      tell(message, key, ProcessingOutcome.RETRY, start, () -> acknowledgement.retry(delay));
      return finish(message, key, ProcessingOutcome.RETRY, start);
    }
    DeadLetterReason reason =
        new DeadLetterReason(
            retryable ? DeadLetterCause.MAX_ATTEMPTS_EXCEEDED : DeadLetterCause.NON_RETRYABLE,
            (retryable
                    ? "handler failed on attempt " + attempt + " of " + maxAttempts
                        + (brokerLimit < retryPolicy.maxAttempts()
                            ? " (the broker's own limit " + brokerLimit + " is below the retry"
                                + " policy's " + retryPolicy.maxAttempts() + ")"
                            : "")
                    : "handler failed with a non-retryable error on attempt " + attempt)
                + ": " + describe(failure),
            consumerGroup,
            key.value(),
            attempt,
            failure.getClass().getName());
    // WARN, not ERROR: the message is settled (ERROR is for messages that could not be); the
    // stack trace at DEBUG, since the same failure usually came with every attempt
    if (LOG.isDebugEnabled()) {
      LOG.warn("dead-lettering key '{}' of {}: {}", key.value(), message.source(), reason, failure);
    } else {
      LOG.warn("dead-lettering key '{}' of {}: {}", key.value(), message.source(), reason);
    }
    return deadLetter(message, key, reason, acknowledgement, start);
  }

  /**
   * Stores the dead-letter copy through the acknowledgement; the listeners hear of it once the copy
   * is stored (once per stored copy, not once per try).
   */
  private ProcessingOutcome deadLetter(
      InboundMessage message,
      @Nullable IdempotencyKey key,
      DeadLetterReason reason,
      Acknowledgement acknowledgement,
      long start) {
    ProcessingOutcome outcome = reason.cause() == DeadLetterCause.CONFLICT
        ? ProcessingOutcome.CONFLICT
        : ProcessingOutcome.DEAD_LETTERED;
    tell(message, key, outcome, start, () -> acknowledgement.deadLetter(reason));
    listener.onDeadLetter(message, reason);
    return finish(message, key, outcome, start);
  }

  /**
   * Tells the broker; when the acknowledgement throws, reports it to the listeners (the delivery
   * stays unsettled) and rethrows.
   */
  private void tell(
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

  /** The failure, and its innermost cause when that is another exception (first lines only). */
  static String describe(Throwable failure) {
    Throwable root = failure;
    java.util.Set<Throwable> seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
    while (root.getCause() != null && seen.add(root)) {
      root = root.getCause();
    }
    String text = firstLine(failure.toString());
    return root == failure ? text : text + " (root cause: " + firstLine(root.toString()) + ")";
  }

  private static String firstLine(String text) {
    int end = text.indexOf('\n');
    return end < 0 ? text : text.substring(0, end);
  }

  /** The failure and its innermost cause, on one line (MyBatis wraps SQL errors in multi-line text). */
  static String oneLine(Throwable e) {
    Throwable root = e;
    java.util.Set<Throwable> seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
    while (root.getCause() != null && seen.add(root)) {
      root = root.getCause();
    }
    String text = root == e
        ? e.toString()
        : e.getClass().getSimpleName() + " (" + root.getClass().getSimpleName() + ": " + root.getMessage() + ")";
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
