package io.idem.internal;

import io.idem.BatchMessageHandler;
import io.idem.BatchOrder;
import io.idem.BatchResult;
import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import io.idem.IdempotencyKey;
import io.idem.IdempotencyKeyExtractor;
import io.idem.IdempotencyListener;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.KeyExtraction;
import io.idem.KeySource;
import io.idem.KeyedMessage;
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
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.Supplier;
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
  private final Handlers<C> handlers;
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
      Handlers<C> handlers,
      IdempotencyKeyExtractor keyExtractor,
      RetryPolicy retryPolicy,
      OversizedKeyPolicy oversizedKeys,
      boolean detectPayloadConflicts,
      List<IdempotencyListener> listeners,
      Duration outageErrorAfter) {
    this.store = store;
    this.consumerGroup = consumerGroup;
    this.handlers = handlers;
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
    IdempotencyKey key = keyed.key;
    if (key == null) {
      return deadLetterKeyless(message, keyed, acknowledgement, start);
    }
    announce(message, key);
    return processKeyed(message, key, Fingerprints.sha256(message.payload()), acknowledgement, start);
  }

  /** Dead-letters a message without a valid key (NO_KEY / INVALID_KEY); the store is not touched. */
  private ProcessingOutcome deadLetterKeyless(
      InboundMessage message, KeyOrReason keyed, Acknowledgement acknowledgement, long start) {
    DeadLetterReason reason =
        new DeadLetterReason(
            keyed.cause, keyed.reason, consumerGroup, null, message.deliveryAttempt(), null);
    String id = message.brokerMessageId();
    LOG.warn("dead-lettering a message of {}{}: {}", message.source(),
        id == null ? "" : " (broker id " + id + ")", reason);
    return deadLetter(message, null, reason, acknowledgement, start);
  }

  /** The key is known: {@code onKey}, and the broker-id fallback noted. */
  private void announce(InboundMessage message, IdempotencyKey key) {
    listener.onKey(message, key);
    if (key.source() == KeySource.BROKER_ID) {
      noteFallback(message, key);
    }
  }

  /** One message in a transaction of its own: {@link #process} after the key, and a batch's redo. */
  private ProcessingOutcome processKeyed(
      InboundMessage message,
      IdempotencyKey key,
      byte[] fingerprint,
      Acknowledgement acknowledgement,
      long start) {
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
    return settle(message, key, claim, acknowledgement, start);
  }

  /** After the commit: tells the broker what the claim decided, and the listeners. */
  private ProcessingOutcome settle(
      InboundMessage message,
      IdempotencyKey key,
      ClaimResult claim,
      Acknowledgement acknowledgement,
      long start) {
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
   * The batch pipeline ({@link IdempotentConsumer#processBatch(List, List, BatchOrder)}): keys,
   * one transaction with one {@link ProcessedEventStore#claimAll} and the handlers of the new
   * messages, then the settlement in order; a failed transaction is answered as a whole (outage,
   * transaction retry, shutdown) or redone message by message (anything else).
   */
  @Override
  public BatchResult processBatch(
      List<InboundMessage> messages, List<Acknowledgement> acknowledgements, BatchOrder order) {
    if (messages.size() != acknowledgements.size()) {
      throw new IllegalArgumentException("messages and acknowledgements must have the same size,"
          + " but had " + messages.size() + " and " + acknowledgements.size());
    }
    Objects.requireNonNull(order, "order");
    long start = System.nanoTime();
    List<Item> items = new ArrayList<>(messages.size());
    List<Item> keyed = new ArrayList<>(messages.size());
    for (int i = 0; i < messages.size(); i++) {
      InboundMessage message = Objects.requireNonNull(messages.get(i), "message");
      Acknowledgement acknowledgement = Objects.requireNonNull(acknowledgements.get(i), "acknowledgement");
      KeyOrReason key = key(message);
      Item item = new Item(message, acknowledgement, key,
          key.key == null ? null : Fingerprints.sha256(message.payload()));
      items.add(item);
      if (key.key != null) {
        announce(message, key.key);
        keyed.add(item);
      }
    }
    if (keyed.isEmpty()) {
      return BatchLoop.run(items, order, item -> deadLetterKeyless(item.message, item.key, item.acknowledgement, start));
    }
    for (Item item : keyed) {
      listener.beforeClaim(item.message, item.key());
    }
    List<ClaimResult> claims;
    try {
      claims = store.inTransaction(tx -> claimAllAndHandle(tx, keyed));
    } catch (Exception e) {
      return batchFailed(items, keyed.size(), e, order, start);
    } catch (VirtualMachineError e) {
      if (!(e instanceof StackOverflowError)) {
        throw e;
      }
      return batchFailed(items, keyed.size(), e, order, start);
    } catch (Error e) {
      return batchFailed(items, keyed.size(), e, order, start);
    }
    outages.reached();
    for (int i = 0; i < keyed.size(); i++) {
      keyed.get(i).claim = claims.get(i);
    }
    return BatchLoop.run(items, order, item -> item.key.key == null
        ? deadLetterKeyless(item.message, item.key, item.acknowledgement, start)
        : settle(item.message, item.key(), item.claim(), item.acknowledgement, start));
  }

  /**
   * The batch's transaction rolled back. An outage, a transaction retry or a shutdown is nobody's
   * fault and would meet every message again: each keyed message gets that retry outcome at once
   * (one outage counted for the one transaction). Anything else is redone message by message.
   */
  private BatchResult batchFailed(
      List<Item> items, int keyedCount, Throwable failure, BatchOrder order, long start) {
    String source = items.get(0).message.source();
    Function<Item, ProcessingOutcome> answer;
    if (Interruption.isShutdown(failure)) {
      answer = item -> released(item.message, item.key(), failure, item.acknowledgement, start);
    } else if (failure instanceof StoreUnavailableException e) {
      Duration delay = outageDelay(
          "a batch of " + keyedCount + " keyed message(s) of " + source + " not processed", e);
      answer = item -> storeUnavailable(item.message, item.key(), e, item.acknowledgement, start, delay);
    } else if (failure instanceof TransactionRetryException e) {
      outages.reached();
      Duration delay = transactionRetryDelay();
      answer = item -> transactionRetry(item.message, item.key(), e, item.acknowledgement, start, delay);
    } else {
      outages.reached();
      LOG.info("a batch of {} keyed message(s) of {} rolled back ({}); redoing it message by message",
          keyedCount, source, oneLine(failure));
      answer = item -> processKeyed(item.message, item.key(), item.fingerprint(), item.acknowledgement, start);
    }
    return BatchLoop.run(items, order, item -> item.key.key == null
        ? deadLetterKeyless(item.message, item.key, item.acknowledgement, start)
        : answer.apply(item));
  }

  private List<ClaimResult> claimAllAndHandle(C tx, List<Item> keyed) throws Exception {
    List<IdempotencyKey> keys = new ArrayList<>(keyed.size());
    List<byte[]> fingerprints = new ArrayList<>(keyed.size());
    for (Item item : keyed) {
      keys.add(item.key());
      fingerprints.add(item.fingerprint());
    }
    List<ClaimResult> claims = claimed(
        () -> store.claimAll(tx, keys, fingerprints), "claim of " + keys.size() + " keys");
    if (claims.size() != keys.size()) {
      throw new StoreUnavailableException("the store answered " + claims.size() + " claim(s) for "
          + keys.size() + " keys", null);
    }
    List<KeyedMessage> fresh = new ArrayList<>(keys.size());
    for (int i = 0; i < keys.size(); i++) {
      if (claims.get(i) == ClaimResult.CLAIMED) {
        fresh.add(new KeyedMessage(keys.get(i), keyed.get(i).message));
      }
    }
    if (!fresh.isEmpty()) {
      handleNew(tx, fresh);
    }
    return claims;
  }

  /**
   * Runs the handler for the claimed messages in order (or the batch handler once with all of
   * them), then confirms each claim and tells {@code afterHandler}.
   */
  private void handleNew(C tx, List<KeyedMessage> fresh) throws Exception {
    KeyedMessageHandler<C> single = handlers.single;
    if (single != null) {
      for (KeyedMessage each : fresh) {
        single.handle(each.key(), each.message(), tx);
        confirmed(tx, each);
      }
      return;
    }
    Objects.requireNonNull(handlers.batch).handle(Collections.unmodifiableList(fresh), tx);
    for (KeyedMessage each : fresh) {
      confirmed(tx, each);
    }
  }

  private void confirmed(C tx, KeyedMessage each) {
    // the handler may have swallowed a database error (the transaction is then aborted and its
    // commit would silently roll back) or ended the transaction itself
    store.confirmClaim(tx, each.key());
    listener.afterHandler(each.message(), each.key());
  }

  /**
   * A claim of the store: a failing claim is never the message's fault (missing table,
   * permissions, outage), so anything but a transaction retry is a store outage: retried, never
   * dead-lettered.
   */
  private static <T> T claimed(Supplier<T> claim, String what) {
    try {
      return claim.get();
    } catch (StoreUnavailableException | TransactionRetryException e) {
      throw e;
    } catch (RuntimeException e) {
      throw new StoreUnavailableException(what + " failed: " + e, e);
    }
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
      Duration delay = outageDelay("key '" + key.value() + "' of " + message.source() + " not processed", e);
      return storeUnavailable(message, key, e, acknowledgement, start, delay);
    }
    outages.reached(); // the database answered
    if (failure instanceof TransactionRetryException e) {
      return transactionRetry(message, key, e, acknowledgement, start, transactionRetryDelay());
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
      long start,
      Duration delay) {
    listener.onRetry(message, key, ProcessingOutcome.RETRY_STORE_UNAVAILABLE, e, delay);
    tell(message, key, ProcessingOutcome.RETRY_STORE_UNAVAILABLE, start,
        () -> acknowledgement.retryWhenStoreAvailable(delay));
    return finish(message, key, ProcessingOutcome.RETRY_STORE_UNAVAILABLE, start);
  }

  /** Counts one failed transaction as an outage and returns its backoff. */
  private Duration outageDelay(String what, StoreUnavailableException e) {
    Duration delay = retryPolicy.backoff(outages.health().consecutiveFailures() + 1);
    outages.failed(what + ", retry in " + delay.toMillis() + " ms", oneLine(e));
    return delay;
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
      long start,
      Duration delay) {
    LOG.info("transaction for key '{}' of {} rolled back, retried in {} ms (not an attempt): {}",
        key.value(), message.source(), delay.toMillis(), oneLine(e));
    listener.onRetry(message, key, ProcessingOutcome.RETRY_TRANSACTION, e, delay);
    tell(message, key, ProcessingOutcome.RETRY_TRANSACTION, start,
        () -> acknowledgement.retryWhenStoreAvailable(delay));
    return finish(message, key, ProcessingOutcome.RETRY_TRANSACTION, start);
  }

  /** 0 to 100 ms at random, never more than the policy's initial backoff. */
  private Duration transactionRetryDelay() {
    long capMillis =
        Math.min(TRANSACTION_RETRY_DELAY_CAP.toMillis(), retryPolicy.initialBackoff().toMillis());
    return Duration.ofMillis(capMillis <= 0 ? 0 : ThreadLocalRandom.current().nextLong(capMillis + 1));
  }

  private ClaimResult claimAndHandle(
      C tx, InboundMessage message, IdempotencyKey key, byte[] fingerprint) throws Exception {
    ClaimResult claim = claimed(
        () -> store.claim(tx, key, fingerprint), "claim of key '" + key.value() + "'");
    if (claim == ClaimResult.CLAIMED) {
      handleNew(tx, List.of(new KeyedMessage(key, message)));
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

  /** One message of a batch on its way through {@link #processBatch}. Confined to the calling thread. */
  private static final class Item {
    final InboundMessage message;
    final Acknowledgement acknowledgement;
    final KeyOrReason key;
    final byte @Nullable [] fingerprint;
    @Nullable ClaimResult claim;

    Item(InboundMessage message, Acknowledgement acknowledgement, KeyOrReason key, byte @Nullable [] fingerprint) {
      this.message = message;
      this.acknowledgement = acknowledgement;
      this.key = key;
      this.fingerprint = fingerprint;
    }

    IdempotencyKey key() {
      return Objects.requireNonNull(key.key);
    }

    byte[] fingerprint() {
      return Objects.requireNonNull(fingerprint);
    }

    ClaimResult claim() {
      return Objects.requireNonNull(claim);
    }
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
