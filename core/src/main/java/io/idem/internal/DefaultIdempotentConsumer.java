package io.idem.internal;

import io.idem.BatchMessageHandler;
import io.idem.BatchOrder;
import io.idem.BatchResult;
import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import io.idem.EnvelopeFormat;
import io.idem.IdempotencyKey;
import io.idem.IdempotencyKeyExtractor;
import io.idem.IdempotencyListener;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.KeyedMessageHandler;
import io.idem.MessageRun;
import io.idem.OversizedKeyPolicy;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.StoreHealth;
import io.idem.StoreUnavailableException;
import io.idem.TransactionRetryException;
import io.idem.internal.ClaimAndHandle.Attempt;
import io.idem.internal.ClaimAndHandle.AttemptsExhausted;
import io.idem.internal.Keys.KeyOrReason;
import io.idem.spi.Acknowledgement;
import io.idem.spi.ClaimResult;
import io.idem.spi.NextClaim;
import io.idem.spi.ProcessedEventStore;
import io.idem.spi.TransactionRun;
import io.idem.spi.TransactionWork;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.function.BiFunction;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The pipeline described on {@link IdempotentConsumer}, one message at a time; failures are
 * classified once, here, by who failed (docs/FAILURES.md). Batches go to a {@link BatchProcessor},
 * which redoes a failed batch through this pipeline.
 */
public final class DefaultIdempotentConsumer<C> implements IdempotentConsumer<C> {
  private static final Logger LOG = LoggerFactory.getLogger(IdempotentConsumer.class);

  private final ProcessedEventStore<C> store;
  private final String consumerGroup;
  private final @Nullable EnvelopeFormat envelopes;
  private final IdempotencyKeyExtractor keyExtractor;
  private final RetryPolicy retryPolicy;
  private final IdempotencyListener listener;
  private final OutageTracker outages;
  private final Keys keys;
  private final ClaimAndHandle<C> work;
  private final Settlement settlement;
  private final BatchProcessor<C> batches;
  private final boolean naturallyIdempotent;
  private final Tracing tracing;
  /**
   * Consecutive transaction retries per key (RetryPolicy#maxTransactionRetries); a key leaves on
   * any other outcome. Cleared whole past {@link #TRANSACTION_RETRY_KEYS} keys (keys another
   * instance settled meanwhile never come back here): a bound on memory, at worst a few more
   * uncounted retries.
   */
  private final java.util.concurrent.ConcurrentHashMap<IdempotencyKey, Integer> transactionRetries =
      new java.util.concurrent.ConcurrentHashMap<>();
  static final int TRANSACTION_RETRY_KEYS = 10_000;

  public DefaultIdempotentConsumer(
      ProcessedEventStore<C> store,
      String consumerGroup,
      Handlers<C> handlers,
      @Nullable EnvelopeFormat envelopes,
      IdempotencyKeyExtractor keyExtractor,
      RetryPolicy retryPolicy,
      OversizedKeyPolicy oversizedKeys,
      boolean detectPayloadConflicts,
      List<IdempotencyListener> listeners,
      Duration outageErrorAfter,
      boolean naturallyIdempotent) {
    this(store, consumerGroup, handlers, envelopes, keyExtractor, retryPolicy, oversizedKeys,
        detectPayloadConflicts, listeners, outageErrorAfter, naturallyIdempotent, null);
  }

  /**
   * @param observationRegistry a Micrometer {@code ObservationRegistry} (typed {@code Object} so
   *     that this class loads without micrometer-observation), or {@code null}: nothing observed
   */
  public DefaultIdempotentConsumer(
      ProcessedEventStore<C> store,
      String consumerGroup,
      Handlers<C> handlers,
      @Nullable EnvelopeFormat envelopes,
      IdempotencyKeyExtractor keyExtractor,
      RetryPolicy retryPolicy,
      OversizedKeyPolicy oversizedKeys,
      boolean detectPayloadConflicts,
      List<IdempotencyListener> listeners,
      Duration outageErrorAfter,
      boolean naturallyIdempotent,
      @Nullable Object observationRegistry) {
    this.tracing = observationRegistry == null
        ? Tracing.NONE
        : ObservedTracing.of(observationRegistry, consumerGroup);
    IdempotencyListener events = tracing.events();
    if (events != null) {
      listeners = new java.util.ArrayList<>(listeners);
      listeners.add(events); // last: the user's listeners see each step before its event
    }
    this.store = store;
    this.consumerGroup = consumerGroup;
    this.envelopes = envelopes;
    this.keyExtractor = keyExtractor;
    this.retryPolicy = retryPolicy;
    this.listener = new Listeners(listeners);
    this.outages = new OutageTracker(LOG, outageErrorAfter, Clock.systemUTC());
    this.keys = new Keys(consumerGroup, envelopes, keyExtractor, oversizedKeys, listener);
    this.naturallyIdempotent = naturallyIdempotent;
    this.work = new ClaimAndHandle<>(store, handlers, listener, naturallyIdempotent, tracing);
    this.settlement =
        new Settlement(consumerGroup, retryPolicy, detectPayloadConflicts, listener, outages,
            naturallyIdempotent ? DeadLetterRecords.NONE : new DeadLetterRecords(store),
            this::processKeyed);
    this.batches =
        new BatchProcessor<>(store, keys, work, settlement, listener, outages, this::processKeyed,
            this::handlerFailed, tracing);
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
    return keyedOrKeyless(keys.key(message), null, acknowledgement, System.nanoTime(), null);
  }

  /**
   * A delivery whose key, or reason for none, is known: dead-lettered when keyless, else announced
   * and processed in a transaction of its own — opened by {@code inRun} (given the key and
   * fingerprint) when it belongs to a {@link MessageRun}, by the store otherwise.
   *
   * @param fingerprint the event's SHA-256 when already computed, else {@code null}
   */
  private ProcessingOutcome keyedOrKeyless(KeyOrReason keyed, byte @Nullable [] fingerprint,
      Acknowledgement acknowledgement, long start,
      @Nullable BiFunction<IdempotencyKey, byte[], Transactions<C>> inRun) {
    IdempotencyKey key = keyed.key();
    // from here on the event inside the delivery's envelopes, if it had any (EnvelopeFormat)
    InboundMessage event = keyed.message();
    if (key == null) {
      return settlement.deadLetterKeyless(event, keyed, acknowledgement, start);
    }
    keys.announce(event, key);
    byte[] print = fingerprint != null ? fingerprint : Fingerprints.sha256(event.payload());
    return processKeyed(event, key, print, acknowledgement, start,
        inRun == null ? store::inTransaction : inRun.apply(key, print));
  }

  /** See {@link BatchProcessor}. */
  @Override
  public BatchResult processBatch(
      List<InboundMessage> messages, List<Acknowledgement> acknowledgements, BatchOrder order) {
    return batches.process(messages, acknowledgements, order);
  }

  /**
   * A run of per-message transactions ({@link MessageRun}): the next delivery's key and
   * fingerprint, computed when the store asks for them (just before a COMMIT), are kept for that
   * delivery's own {@link MessageRun#process} call, so they are computed once. Confined to the
   * thread that opened it.
   */
  @Override
  public MessageRun openRun() {
    return new Run(store.openRun());
  }

  private final class Run implements MessageRun {
    private final TransactionRun<C> transactions;
    /** The delivery announced last as next, with its key (or reason) and fingerprint. */
    private @Nullable InboundMessage peeked;
    private @Nullable KeyOrReason peekedKey;
    private byte @Nullable [] peekedFingerprint;

    Run(TransactionRun<C> transactions) {
      this.transactions = transactions;
    }

    @Override
    public ProcessingOutcome process(InboundMessage delivery, Acknowledgement acknowledgement,
        Supplier<@Nullable InboundMessage> next) {
      long start = System.nanoTime();
      KeyOrReason keyed;
      byte @Nullable [] fingerprint;
      if (delivery == peeked && peekedKey != null) {
        keyed = peekedKey;
        fingerprint = peekedFingerprint;
      } else {
        keyed = keys.key(delivery);
        fingerprint = null;
      }
      peeked = null;
      peekedKey = null;
      peekedFingerprint = null;
      // a naturally idempotent pipeline claims nothing, so there is nothing to claim ahead
      return keyedOrKeyless(keyed, fingerprint, acknowledgement, start, naturallyIdempotent ? null
          : (key, print) -> work -> transactions.inTransaction(work, key, print, () -> peek(next)));
    }

    /**
     * The next delivery's claim, kept for its own call; {@code null} when it has no key, or when
     * building it threw: an {@link Error} from the next delivery's key extractor or envelope format
     * (the pipeline's guard there catches RuntimeException only) is that delivery's, thrown again
     * by its own call, never the failure of the message committing now.
     */
    private @Nullable NextClaim peek(Supplier<@Nullable InboundMessage> next) {
      InboundMessage delivery;
      KeyOrReason keyed;
      try {
        delivery = next.get();
        if (delivery == null) {
          return null;
        }
        keyed = keys.key(delivery);
      } catch (RuntimeException | Error e) {
        if (e instanceof VirtualMachineError && !(e instanceof StackOverflowError)) {
          throw e;
        }
        LOG.debug("the next delivery of the run could not be keyed ahead; it is keyed by its own call", e);
        return null;
      }
      IdempotencyKey key = keyed.key();
      byte @Nullable [] fingerprint = key == null ? null : Fingerprints.sha256(keyed.message().payload());
      peeked = delivery;
      peekedKey = keyed;
      peekedFingerprint = fingerprint;
      return key == null || fingerprint == null ? null : new NextClaim(key, fingerprint);
    }

    @Override
    public void close() {
      peeked = null;
      peekedKey = null;
      peekedFingerprint = null;
      transactions.close();
    }
  }

  /** How {@link #processKeyed} opens the message's transaction. */
  @FunctionalInterface
  private interface Transactions<C> {
    ClaimResult run(TransactionWork<C, ClaimResult> work) throws Exception;
  }

  /** One message in a transaction of its own: {@link #process} after the key, and a batch's redo. */
  private ProcessingOutcome processKeyed(
      InboundMessage message,
      IdempotencyKey key,
      byte[] fingerprint,
      Acknowledgement acknowledgement,
      long start) {
    return processKeyed(message, key, fingerprint, acknowledgement, start, store::inTransaction);
  }

  private ProcessingOutcome processKeyed(
      InboundMessage message,
      IdempotencyKey key,
      byte[] fingerprint,
      Acknowledgement acknowledgement,
      long start,
      Transactions<C> transactions) {
    Tracing.Span span = tracing.start(message, key);
    if (span == null) {
      return processKeyedUnobserved(message, key, fingerprint, acknowledgement, start, transactions);
    }
    ProcessingOutcome outcome = null;
    Throwable failure = null;
    try {
      outcome = processKeyedUnobserved(message, key, fingerprint, acknowledgement, start, transactions);
      return outcome;
    } catch (RuntimeException | Error e) {
      failure = e;
      throw e;
    } finally {
      span.stop(outcome, failure);
    }
  }

  /**
   * One possible redelivery at a time in this JVM, every pipeline included: a flagged delivery
   * ({@link InboundMessage#unaccountedRedelivery()}) counts its attempt, claims, runs its handler
   * and commits holding it, so that a process death during that run is charged to it alone, never
   * to the other flagged deliveries the same consumer (or another one of the JVM) runs at once —
   * the messages received or prefetched with a process-killing one, redelivered with it after each
   * death (docs/FAILURES.md, "One possible redelivery at a time"). Unflagged deliveries never take it.
   */
  private static final java.util.concurrent.locks.ReentrantLock POSSIBLE_REDELIVERIES =
      new java.util.concurrent.locks.ReentrantLock();

  /** {@link #processKeyed}, within its observation when there is one. */
  private ProcessingOutcome processKeyedUnobserved(
      InboundMessage message,
      IdempotencyKey key,
      byte[] fingerprint,
      Acknowledgement acknowledgement,
      long start,
      Transactions<C> transactions) {
    listener.beforeClaim(message, key);
    if (naturallyIdempotent || !message.unaccountedRedelivery()) {
      return countAndRun(message, key, fingerprint, acknowledgement, start, transactions);
    }
    try {
      POSSIBLE_REDELIVERIES.lockInterruptibly();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return failed(message, key, e, acknowledgement, start); // closing: handed back, not an attempt
    }
    try {
      return countAndRun(message, key, fingerprint, acknowledgement, start, transactions);
    } finally {
      POSSIBLE_REDELIVERIES.unlock();
    }
  }

  /** The attempt, the transaction and the settlement of one keyed delivery. */
  private ProcessingOutcome countAndRun(
      InboundMessage message,
      IdempotencyKey key,
      byte[] fingerprint,
      Acknowledgement acknowledgement,
      long start,
      Transactions<C> transactions) {
    Attempt attempt;
    try {
      attempt = attempt(message, key);
    } catch (RuntimeException e) {
      return failed(message, key, e instanceof StoreUnavailableException
              || e instanceof TransactionRetryException || Interruption.isShutdown(e)
          ? e
          : new StoreUnavailableException("counting the attempt of key '" + key.value()
              + "' failed: " + e, e), acknowledgement, start);
    }
    ClaimResult claim;
    try {
      claim = transactions.run(tx -> work.one(tx, message, key, fingerprint, attempt));
    } catch (AttemptsExhausted e) {
      outages.reached();
      return attemptsExhausted(message, key, e.attempt, acknowledgement, start);
    } catch (Exception e) {
      return failed(message, key, e, acknowledgement, start, attempt.number());
    } catch (VirtualMachineError e) {
      if (!(e instanceof StackOverflowError)) {
        // out of memory or a broken VM: nothing sensible to decide about the message. Its attempt
        // was counted before the handler when it may have run before, and is not cleared: the
        // consumer this stops, once restarted, counts the next delivery as the next attempt
        throw e;
      }
      return failed(message, key, e, acknowledgement, start, attempt.number());
    } catch (Error e) {
      // AssertionError, NoClassDefFoundError, …: the handler failed like any other failure
      return failed(message, key, e, acknowledgement, start, attempt.number());
    }
    outages.reached();
    transactionRetries.remove(key);
    return settlement.settle(message, key, claim, acknowledgement, start);
  }

  /**
   * The delivery's attempt, counted in the store before its handler runs when the adapter says
   * the broker may not have counted it ({@link InboundMessage#unaccountedRedelivery()}: a process
   * death or an Error during an earlier run): the store's count of such runs plus the first
   * delivery, which wrote nothing. A first delivery costs nothing here (docs/FAILURES.md,
   * "Attempts that survive the process").
   */
  private Attempt attempt(InboundMessage message, IdempotencyKey key) {
    if (naturallyIdempotent || !message.unaccountedRedelivery()) {
      return new Attempt(message.deliveryAttempt(), false, false);
    }
    int started = store.startAttempt(key); // counted runs, this one included
    if (started <= 0) { // the store keeps no counts
      return new Attempt(message.deliveryAttempt(), false, false);
    }
    // The first delivery wrote nothing: it may have died in its handler, or have been only
    // prefetched (released by a clean close, or by a consumer that died in another message's
    // handler). Deciding before the handler, it is counted as a death (the "+ 1"), but only once
    // a counted run ended without an outcome (started >= 2): the first counted run always runs,
    // so a message that never reached a handler is never refused unrun. A handler failure is
    // charged the certain runs only (started), as the same failure without a restart would be.
    int withFirst = started == Integer.MAX_VALUE ? started : started + 1;
    boolean exhausted = started >= 2 && withFirst > retryPolicy.maxAttempts();
    return new Attempt(exhausted ? withFirst : started, true, exhausted);
  }

  /**
   * A new key whose handler was started more than maxAttempts times without an outcome — the
   * process died, or an Error stopped the consumer, during each run — is dead-lettered without
   * running it again.
   */
  private ProcessingOutcome attemptsExhausted(InboundMessage message, IdempotencyKey key,
      int attempt, Acknowledgement acknowledgement, long start) {
    DeadLetterReason reason = new DeadLetterReason(
        DeadLetterCause.MAX_ATTEMPTS_EXCEEDED,
        "the handler was started " + (attempt - 1) + " time(s) for this message without an outcome"
            + " (the process died, or an Error stopped the consumer, during each run; its first"
            + " delivery is one of them whether or not it reached a handler, which Idem cannot tell)"
            + " and maxAttempts is " + retryPolicy.maxAttempts() + "; not run again",
        consumerGroup,
        key.value(),
        attempt,
        null);
    LOG.warn("dead-lettering key '{}' of {} before its handler runs: {}", key.value(),
        message.source(), reason);
    return settlement.deadLetter(message, key, reason, acknowledgement, start);
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
    return failed(message, key, failure, acknowledgement, start, message.deliveryAttempt());
  }

  private ProcessingOutcome failed(
      InboundMessage message,
      IdempotencyKey key,
      Throwable failure,
      Acknowledgement acknowledgement,
      long start,
      int attempt) {
    if (Interruption.isShutdown(failure)) {
      return settlement.released(message, key, failure, acknowledgement, start);
    }
    if (failure instanceof StoreUnavailableException e) {
      Duration delay = settlement.outageDelay(
          "key '" + key.value() + "' of " + message.source() + " not processed", e);
      return settlement.storeUnavailable(message, key, e, acknowledgement, start, delay);
    }
    outages.reached(); // the database answered
    if (failure instanceof TransactionRetryException e) {
      if (transactionRetries.size() > TRANSACTION_RETRY_KEYS) {
        transactionRetries.clear();
      }
      int inARow = transactionRetries.merge(key, 1, Integer::sum);
      if (inARow <= retryPolicy.maxTransactionRetries()) {
        return settlement.transactionRetry(
            message, key, e, acknowledgement, start, settlement.transactionRetryDelay());
      }
      // the database said "retry" every time: counted as an attempt from now on, so it cannot loop
      LOG.warn("transaction for key '{}' of {} retried {} time(s) in a row (maxTransactionRetries {});"
          + " this one counts as a failed attempt", key.value(), message.source(), inARow - 1,
          retryPolicy.maxTransactionRetries());
    }
    transactionRetries.remove(key);
    return handlerFailed(message, key, failure, acknowledgement, start, attempt);
  }

  private ProcessingOutcome handlerFailed(
      InboundMessage message,
      IdempotencyKey key,
      Throwable failure,
      Acknowledgement acknowledgement,
      long start) {
    return handlerFailed(message, key, failure, acknowledgement, start, message.deliveryAttempt());
  }

  /**
   * @param attempt the delivery's attempt: the broker's, or the store's count ({@link #attempt});
   *     the broker's limit is compared with the broker's own count
   */
  private ProcessingOutcome handlerFailed(
      InboundMessage message,
      IdempotencyKey key,
      Throwable failure,
      Acknowledgement acknowledgement,
      long start,
      int attempt) {
    boolean retryable = retryPolicy.isRetryable(failure);
    // dead-letter at the lower of the policy's and the broker's limit, so the broker never acts first
    int brokerLimit = message.brokerAttemptLimit();
    int maxAttempts = Math.min(retryPolicy.maxAttempts(), brokerLimit);
    boolean brokerLimitReached = message.deliveryAttempt() >= brokerLimit;
    if (retryable && attempt < retryPolicy.maxAttempts() && !brokerLimitReached) {
      Duration delay = retryPolicy.backoff(attempt);
      String what = "handler failed for key '" + key.value() + "' of " + message.source()
          + " (attempt " + attempt + " of " + maxAttempts + "); rolled back, retry in "
          + delay.toMillis() + " ms";
      if (LOG.isDebugEnabled()) {
        LOG.warn(what, failure); // the stack trace only at DEBUG: a failing handler repeats
      } else {
        LOG.warn("{}: {}", what, FailureText.oneLine(failure));
      }
      listener.onRetry(message, key, ProcessingOutcome.RETRY, failure, delay);
      settlement.tell(message, key, ProcessingOutcome.RETRY, start, () -> acknowledgement.retry(delay));
      return settlement.finish(message, key, ProcessingOutcome.RETRY, start);
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
                + ": " + FailureText.describe(failure),
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
    return settlement.deadLetter(message, key, reason, acknowledgement, start);
  }

  /** Number of keys taken from broker message ids since this pipeline was built. */
  public long brokerIdFallbacks() {
    return keys.brokerIdFallbacks();
  }

  /**
   * The business logic of a pipeline: a per-message handler, or a batch handler (which a single
   * message reaches as a one-element list). Immutable.
   */
  public static final class Handlers<C> {
    final @Nullable KeyedMessageHandler<C> single;
    final @Nullable BatchMessageHandler<C> batch;

    private Handlers(@Nullable KeyedMessageHandler<C> single, @Nullable BatchMessageHandler<C> batch) {
      this.single = single;
      this.batch = batch;
    }

    /** A handler called once per new message. */
    public static <C> Handlers<C> of(KeyedMessageHandler<C> handler) {
      return new Handlers<>(Objects.requireNonNull(handler, "handler"), null);
    }

    /** A handler called once per batch with all its new messages. */
    public static <C> Handlers<C> of(BatchMessageHandler<C> handler) {
      return new Handlers<>(null, Objects.requireNonNull(handler, "batchHandler"));
    }
  }

  @Override
  public String toString() {
    return "IdempotentConsumer[group=" + consumerGroup + ", envelopes=" + envelopes + ", keys=" + keyExtractor
        + ", " + retryPolicy + "]";
  }
}
