package io.idem;

import io.idem.internal.DefaultIdempotentConsumer;
import io.idem.spi.Acknowledgement;
import io.idem.spi.ProcessedEventStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The idempotent processing pipeline for one consumer group, independent of any broker:
 *
 * <ol>
 *   <li>extract the key ({@link IdempotencyKeyExtractor}); none → dead-letter with the reason;
 *   <li>open a store transaction and claim the key (insert the processed-events marker);
 *   <li>new key → run the {@link MessageHandler} (or {@link KeyedMessageHandler}) in that
 *       transaction, commit, then {@link Acknowledgement#ack() ack}; already committed → ack and
 *       skip ({@link ProcessingOutcome#DUPLICATE}); committed with another payload → dead-letter
 *       ({@link ProcessingOutcome#CONFLICT});
 *   <li>a failure rolls back marker and business writes together and is classified once, by who
 *       failed (docs/FAILURES.md): the handler (it threw, or the database rejected its work) →
 *       {@link Acknowledgement#retry retry} with backoff, one attempt used, or dead-letter when the
 *       {@link RetryPolicy} says so ({@link ProcessingOutcome#RETRY}); the store's own connection
 *       cannot reach the database → {@link Acknowledgement#retryWhenStoreAvailable retry when the
 *       store is back}, never an attempt, never a dead letter ({@link
 *       ProcessingOutcome#RETRY_STORE_UNAVAILABLE}); the database asked for a retry (40001,
 *       40P01, the claim's lock timeout) → retried at once, not an attempt ({@link
 *       ProcessingOutcome#RETRY_TRANSACTION}); the consumer is shutting down → {@link
 *       Acknowledgement#release() handed back} unacknowledged, not an attempt, the interrupt flag
 *       restored ({@link ProcessingOutcome#RELEASED}).
 * </ol>
 *
 * <p>The broker is told only after the transaction ended, so a crash anywhere leaves either no
 * effect and no ack (redelivered, applied once) or a committed effect and no ack (redelivered,
 * skipped as a duplicate).
 *
 * <p>Thread-safe: adapters call {@link #process} from several worker threads at once.
 *
 * @param <C> the store's transaction context
 */
public interface IdempotentConsumer<C> {

  /**
   * Processes one delivery and settles it through {@code acknowledgement}.
   *
   * @return what happened; a duplicate is an outcome, not an exception
   * @throws RuntimeException only when {@code acknowledgement} itself threw (the delivery stays
   *     unsettled; the broker redelivers it and the store deduplicates)
   * @throws Error when an {@link IdempotencyListener} or the key extractor threw one (the handler's
   *     errors other than {@link VirtualMachineError}s, {@link StackOverflowError} included, are
   *     handler failures and retried); the delivery may or may not be settled — adapters check
   *     their acknowledgement before handing it back
   */
  ProcessingOutcome process(InboundMessage message, Acknowledgement acknowledgement);

  /** The consumer group every key of this pipeline belongs to. */
  String consumerGroup();

  /** The retry policy; adapters read it to size broker-side retries. */
  RetryPolicy retryPolicy();

  /**
   * Whether the store currently reaches the database, as the last transactions found it: for
   * readiness probes and adapters' health views. Thread-safe; no database access.
   */
  StoreHealth storeHealth();

  /**
   * Starts a pipeline on {@code store}.
   *
   * @param store the processed-events store, e.g. {@code MyBatisProcessedEventStore}
   */
  static <C> Builder<C> builder(ProcessedEventStore<C> store) {
    return new Builder<>(store);
  }

  /** Builder of {@link IdempotentConsumer}; {@link #build()} validates and copies. */
  final class Builder<C> {
    /** Default {@link #outageErrorAfter(Duration)}: 2 minutes. */
    public static final Duration DEFAULT_OUTAGE_ERROR_AFTER = Duration.ofMinutes(2);

    private final ProcessedEventStore<C> store;
    private @Nullable String consumerGroup;
    private @Nullable KeyedMessageHandler<C> handler;
    private IdempotencyKeyExtractor keyExtractor = IdempotencyKeyExtractor.defaults();
    private RetryPolicy retryPolicy = RetryPolicy.ofDefaults();
    private OversizedKeyPolicy oversizedKeys = OversizedKeyPolicy.REJECT;
    private boolean detectPayloadConflicts = true;
    private final List<IdempotencyListener> listeners = new ArrayList<>();
    private Duration outageErrorAfter = DEFAULT_OUTAGE_ERROR_AFTER;

    private Builder(ProcessedEventStore<C> store) {
      this.store = Objects.requireNonNull(store, "store");
    }

    /**
     * Required. Instances sharing a consumer group apply each key once between them. 1 to
     * {@value IdempotencyKey#MAX_CONSUMER_GROUP_LENGTH} characters, not blank, no control
     * character and no unpaired UTF-16 surrogate; checked by {@link #build()}.
     */
    public Builder<C> consumerGroup(String value) {
      this.consumerGroup = Objects.requireNonNull(value, "consumerGroup");
      return this;
    }

    /**
     * Required (this or {@link #handler(KeyedMessageHandler)}; the last one set wins). The
     * business logic, given the message: {@code .handler((message, session) -> ...)}.
     */
    public Builder<C> handler(MessageHandler<C> value) {
      Objects.requireNonNull(value, "handler");
      this.handler = (key, message, context) -> value.handle(message, context);
      return this;
    }

    /**
     * Required (this or {@link #handler(MessageHandler)}; the last one set wins). The business
     * logic, given the idempotency key the store claimed as well, to key outbox rows by it:
     * {@code .handler((key, message, session) -> ...)}.
     */
    public Builder<C> handler(KeyedMessageHandler<C> value) {
      this.handler = Objects.requireNonNull(value, "handler");
      return this;
    }

    /** Default {@link IdempotencyKeyExtractor#defaults()}: header, then CloudEvents. */
    public Builder<C> keyExtractor(IdempotencyKeyExtractor value) {
      this.keyExtractor = Objects.requireNonNull(value, "keyExtractor");
      return this;
    }

    /** Default {@link RetryPolicy#ofDefaults()}. */
    public Builder<C> retryPolicy(RetryPolicy value) {
      this.retryPolicy = Objects.requireNonNull(value, "retryPolicy");
      return this;
    }

    /** Default {@link OversizedKeyPolicy#REJECT}. */
    public Builder<C> oversizedKeys(OversizedKeyPolicy value) {
      this.oversizedKeys = Objects.requireNonNull(value, "oversizedKeys");
      return this;
    }

    /**
     * Default {@code true}: a key seen again with a different payload SHA-256 is a
     * {@link ProcessingOutcome#CONFLICT} (dead-lettered). {@code false} treats it as a duplicate,
     * for producers whose retries legitimately change the payload (a send timestamp, say).
     */
    public Builder<C> detectPayloadConflicts(boolean value) {
      this.detectPayloadConflicts = value;
      return this;
    }

    /**
     * Default {@link #DEFAULT_OUTAGE_ERROR_AFTER} (2 minutes). A store outage is logged at WARN
     * when it starts and then at doubling intervals (5 s, 10 s, 20 s … at most every 10 minutes);
     * once it has lasted this long those lines are logged at ERROR, so an outage — or a failure
     * wrongly taken for one — is seen in minutes. Positive.
     */
    public Builder<C> outageErrorAfter(Duration value) {
      this.outageErrorAfter = Objects.requireNonNull(value, "outageErrorAfter");
      return this;
    }

    /** Adds a listener; listeners run in the order added. */
    public Builder<C> listener(IdempotencyListener value) {
      this.listeners.add(Objects.requireNonNull(value, "listener"));
      return this;
    }

    /**
     * @throws IllegalStateException when the consumer group or the handler is missing
     * @throws IllegalArgumentException when the consumer group is invalid
     */
    public IdempotentConsumer<C> build() {
      if (consumerGroup == null) {
        throw new IllegalStateException("consumerGroup must be set, but was not");
      }
      String problem = IdempotencyKey.problemWithConsumerGroup(consumerGroup);
      if (problem != null) {
        throw new IllegalArgumentException(problem);
      }
      if (handler == null) {
        throw new IllegalStateException("handler must be set, but was not");
      }
      if (outageErrorAfter.isZero() || outageErrorAfter.isNegative()) {
        throw new IllegalArgumentException("outageErrorAfter must be positive, but was " + outageErrorAfter);
      }
      return new DefaultIdempotentConsumer<>(
          store,
          consumerGroup,
          handler,
          keyExtractor,
          retryPolicy,
          oversizedKeys,
          detectPayloadConflicts,
          List.copyOf(listeners),
          outageErrorAfter);
    }
  }
}
