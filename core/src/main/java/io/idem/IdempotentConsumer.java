package io.idem;

import io.idem.internal.BatchLoop;
import io.idem.internal.DefaultIdempotentConsumer;
import io.idem.spi.Acknowledgement;
import io.idem.spi.ProcessedEventStore;
import io.idem.spi.Settings;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Supplier;
import java.util.stream.IntStream;
import org.jspecify.annotations.Nullable;

/**
 * The idempotent processing pipeline for one consumer group, independent of any broker:
 *
 * <ol>
 *   <li>open the envelope a broker or platform put around the event, if any ({@link
 *       EnvelopeFormat}: SNS notifications, CloudEvents structured mode by default); from here
 *       on the key, the payload fingerprint and the handler see the event inside;
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

  /**
   * Processes what one receive returned (a Kafka poll of one partition, an SQS receive of up to
   * 10, a RabbitMQ prefetch window) in one store transaction, and settles each delivery through
   * its own acknowledgement: {@code processBatch(messages, acknowledgements,
   * BatchOrder.UNORDERED).outcomes()}. For a source whose order matters use {@link
   * #processBatch(List, List, BatchOrder)} with {@link BatchOrder#ORDERED}.
   *
   * @return the outcome of each message, parallel to {@code messages}
   * @throws IllegalArgumentException when the lists differ in size
   * @throws RuntimeException as {@link #processBatch(List, List, BatchOrder)}
   */
  default List<ProcessingOutcome> processBatch(
      List<InboundMessage> messages, List<Acknowledgement> acknowledgements) {
    return processBatch(messages, acknowledgements, BatchOrder.UNORDERED).outcomes();
  }

  /**
   * Processes a batch of deliveries (what one receive returned) with one transaction, one
   * multi-row claim ({@link ProcessedEventStore#claimAll}) and one COMMIT, then settles each
   * delivery through its own acknowledgement, in receive order (docs/DESIGN.md, "Batch mode"):
   *
   * <ol>
   *   <li>each message's key is extracted; one without a valid key is dead-lettered on its own
   *       (as {@link #process} does) and does not hold up the others;
   *   <li>in one transaction: the keys of the others are claimed together; the handler runs for
   *       each new one in order (a {@link BatchMessageHandler} once, with all of them); the
   *       transaction commits;
   *   <li>in receive order: {@link ProcessingOutcome#PROCESSED} and {@link
   *       ProcessingOutcome#DUPLICATE} acked, {@link ProcessingOutcome#CONFLICT} and keyless
   *       messages dead-lettered. A key twice in the batch is applied once, the second copy being
   *       a duplicate (or a conflict when its payload differs).
   * </ol>
   *
   * <p>When the transaction fails, everything rolls back and:
   *
   * <ul>
   *   <li>the store could not be reached ({@link StoreUnavailableException}), the database asked
   *       for a retry ({@link TransactionRetryException}) or the consumer is shutting down: every
   *       message is answered with that retry outcome ({@link
   *       ProcessingOutcome#RETRY_STORE_UNAVAILABLE}, {@link ProcessingOutcome#RETRY_TRANSACTION},
   *       {@link ProcessingOutcome#RELEASED}) without being redone one by one — none of them was
   *       at fault, and a redo would meet the same database — and no attempt is counted;
   *   <li>anything else (a handler threw, the database rejected a handler's work, the COMMIT
   *       failed): the batch is redone message by message with {@link #process}'s rules, in
   *       order, so the messages before the failing one are applied once and the failing one
   *       takes the normal retry or dead-letter path. When the run of a per-message handler was
   *       what failed (it threw, or its claim was found lost right after it), that run was the
   *       failing message's attempt: it is settled as a handler failure (retry or dead letter,
   *       counted) without running its handler again, so a message that always fails runs its
   *       handler once per attempt. A failure no single run owns (the COMMIT, a {@link
   *       BatchMessageHandler}) is redone whole, and a batch handler is then called with one
   *       message at a time.
   * </ul>
   *
   * <p>With {@link BatchOrder#ORDERED} nothing behind the first message that is handed back
   * ({@link ProcessingOutcome#isRetry()}) or whose acknowledgement threw is started: the result
   * says where it stopped, and the adapter hands the rest back itself, without counting an
   * attempt. With {@link BatchOrder#UNORDERED} every message is processed.
   *
   * <p>Listeners hear each message as in {@link #process}: {@code onKey}, {@code beforeClaim},
   * {@code afterHandler} (after the batch handler returned, for each of its messages), {@code
   * afterCommit}, the acknowledgement, {@code onOutcome}. A message redone after a failed batch
   * hears {@code beforeClaim} again (a new transaction) and then its own outcome.
   *
   * <p>Thread-safe like {@link #process}; one call's messages are processed on the calling
   * thread, one transaction at a time.
   *
   * @param messages the deliveries, in receive order (an empty batch returns an empty result
   *     without touching the store)
   * @param acknowledgements one per message, parallel to {@code messages}; each is called at most
   *     once, and only for a started message
   * @param order whether a handed-back message holds up the ones behind it
   * @return the outcomes of the started messages and where it stopped
   * @throws IllegalArgumentException when the lists differ in size
   * @throws RuntimeException when an acknowledgement threw (after {@code onAcknowledgementFailure}):
   *     the first such exception, later ones suppressed in it. With {@link BatchOrder#UNORDERED}
   *     every other message was still settled; with {@link BatchOrder#ORDERED} the messages behind
   *     the failing one were not started. The adapter finds the unsettled ones from its own
   *     acknowledgements and hands them back, as after {@link #process} threw
   * @throws Error as {@link #process}
   */
  default BatchResult processBatch(
      List<InboundMessage> messages, List<Acknowledgement> acknowledgements, BatchOrder order) {
    if (messages.size() != acknowledgements.size()) {
      throw new IllegalArgumentException("messages and acknowledgements must have the same size,"
          + " but had " + messages.size() + " and " + acknowledgements.size());
    }
    Objects.requireNonNull(order, "order");
    return BatchLoop.run(IntStream.range(0, messages.size()).boxed().toList(), order,
        i -> process(messages.get(i), acknowledgements.get(i)));
  }

  /**
   * Opens a {@link MessageRun}: per-message processing of deliveries that the calling thread takes
   * one after the other, in which each next message's claim may travel with the previous COMMIT.
   * The default processes every message with {@link #process} and never asks for the next one.
   */
  default MessageRun openRun() {
    return new MessageRun() {
      @Override
      public ProcessingOutcome process(InboundMessage message, Acknowledgement acknowledgement,
          Supplier<@Nullable InboundMessage> next) {
        return IdempotentConsumer.this.process(message, acknowledgement);
      }

      @Override
      public void close() {}
    };
  }

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
    private @Nullable BatchMessageHandler<C> batchHandler;
    private IdempotencyKeyExtractor keyExtractor = IdempotencyKeyExtractor.defaults();
    private boolean standardEnvelopes = true;
    private final List<EnvelopeFormat> envelopes = new ArrayList<>();
    private RetryPolicy retryPolicy = RetryPolicy.ofDefaults();
    private OversizedKeyPolicy oversizedKeys = OversizedKeyPolicy.REJECT;
    private boolean detectPayloadConflicts = true;
    private boolean naturallyIdempotent = false;
    private final List<IdempotencyListener> listeners = new ArrayList<>();
    private Duration outageErrorAfter = DEFAULT_OUTAGE_ERROR_AFTER;
    /** An ObservationRegistry, typed Object so that the builder loads without Micrometer. */
    private @Nullable Object observationRegistry;

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
     * Required (this, {@link #handler(KeyedMessageHandler)} or {@link
     * #batchHandler(BatchMessageHandler)}; the last one set wins). The
     * business logic, given the message: {@code .handler((message, session) -> ...)}.
     */
    public Builder<C> handler(MessageHandler<C> value) {
      Objects.requireNonNull(value, "handler");
      this.handler = (key, message, context) -> value.handle(message, context);
      this.batchHandler = null;
      return this;
    }

    /**
     * Required (this, {@link #handler(MessageHandler)} or {@link
     * #batchHandler(BatchMessageHandler)}; the last one set wins). The business
     * logic, given the idempotency key the store claimed as well, to key outbox rows by it:
     * {@code .handler((key, message, session) -> ...)}.
     */
    public Builder<C> handler(KeyedMessageHandler<C> value) {
      this.handler = Objects.requireNonNull(value, "handler");
      this.batchHandler = null;
      return this;
    }

    /**
     * Instead of {@link #handler(MessageHandler)} (the last one set wins): the business logic for
     * all the new messages of a batch at once, so that it can write their effects with one
     * multi-row statement ({@link IdempotentConsumer#processBatch(List, List, BatchOrder)}).
     * {@link IdempotentConsumer#process} calls it
     * with a one-element list, and so does the message-by-message redo of a failed batch.
     */
    public Builder<C> batchHandler(BatchMessageHandler<C> value) {
      this.batchHandler = Objects.requireNonNull(value, "batchHandler");
      this.handler = null;
      return this;
    }

    /** Default {@link IdempotencyKeyExtractor#defaults()}: header, then CloudEvents. */
    public Builder<C> keyExtractor(IdempotencyKeyExtractor value) {
      this.keyExtractor = Objects.requireNonNull(value, "keyExtractor");
      return this;
    }

    /**
     * Default {@code true}: the {@link EnvelopeFormat#standard() standard envelopes} — SNS
     * notifications, CloudEvents structured mode — are recognized and opened before key
     * extraction, so that the key, the payload fingerprint and the handler see the producer's
     * event (docs/KEYS.md). {@code false} hands every delivery over as it arrived, except for
     * formats added with {@link #envelope(EnvelopeFormat)}.
     */
    public Builder<C> standardEnvelopes(boolean value) {
      this.standardEnvelopes = value;
      return this;
    }

    /**
     * Adds an envelope format, tried after the standard ones and the formats added before:
     * {@code .envelope(EnvelopeFormat.eventBridge())}, or a custom {@link EnvelopeFormat}.
     */
    public Builder<C> envelope(EnvelopeFormat value) {
      this.envelopes.add(Objects.requireNonNull(value, "envelope"));
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
     * Default {@code false}. {@code true} declares that the handler is naturally idempotent: it
     * only sets state with a version-guarded upsert (store-jdbc's {@code VersionedUpsert}), so
     * applying a message again, or an older one after a newer one, leaves the same newest state.
     * The pipeline then writes no processed-events marker: it opens the transaction, runs the
     * handler, commits and acks, so every delivery is {@link ProcessingOutcome#PROCESSED} (there
     * is no {@link ProcessingOutcome#DUPLICATE} and no {@link ProcessingOutcome#CONFLICT}, since
     * there is no marker to compare with). Keys are still extracted (a keyless message is still
     * dead-lettered, the handler still gets the key), retries and dead letters are unchanged.
     *
     * <p>Safe only when every write of the handler converges on redelivery and reordering. Not
     * safe for counters or sums, appends (a ledger line, an outbox row, a message sent), or any
     * effect outside the database: those would be applied once per delivery
     * (docs/NATURAL-IDEMPOTENCY.md).
     */
    public Builder<C> naturallyIdempotent(boolean value) {
      this.naturallyIdempotent = value;
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
     * Default none: nothing is observed and nothing is allocated for it. With a Micrometer {@code
     * ObservationRegistry} (micrometer-observation is an optional dependency; Micrometer Tracing
     * with its OpenTelemetry or Brave bridge turns observations into spans), the processing of
     * each keyed message is an observation {@code idem.consume} — tags {@code
     * idem.consumer.group}, {@code idem.source}, {@code idem.outcome}, high-cardinality {@code
     * idem.key}; events {@code idem.claim}, {@code idem.handler}, {@code idem.commit}, {@code
     * idem.ack} — whose parent is the message's W3C {@code traceparent} header (a receiver
     * context), a batch's ({@link IdempotentConsumer#processBatch}) one observation {@code
     * idem.consume.batch}, and an outbox row a handler enqueues an {@code idem.outbox.enqueue}
     * child whose context the row stores ({@link TraceContext}; docs/METRICS.md, "Tracing"). The
     * MDC entries around the handler are set with or without a registry.
     *
     * @param value an {@code io.micrometer.observation.ObservationRegistry}
     */
    public Builder<C> observationRegistry(io.micrometer.observation.ObservationRegistry value) {
      this.observationRegistry = Objects.requireNonNull(value, "observationRegistry");
      return this;
    }

    /**
     * @throws IllegalStateException when the consumer group or the handler is missing, or when
     *     {@link #naturallyIdempotent} is set on a store whose claim check needs the marker
     *     ({@link ProcessedEventStore#confirmsWithoutMarkers()}: store-jdbc on MariaDB)
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
      if (handler == null && batchHandler == null) {
        throw new IllegalStateException("handler must be set, but was not");
      }
      Settings.positive("outageErrorAfter", outageErrorAfter);
      if (naturallyIdempotent && !store.confirmsWithoutMarkers()) {
        throw new IllegalStateException("naturallyIdempotent(true) does not go with this store ("
            + store + "): it checks after each handler that the transaction still holds the"
            + " message's marker, and a naturally idempotent pipeline writes none, so every message"
            + " would fail and be redelivered for ever; keep the markers (the default) or run the"
            + " option on PostgreSQL (docs/NATURAL-IDEMPOTENCY.md)");
      }
      List<EnvelopeFormat> formats = new ArrayList<>();
      if (standardEnvelopes) {
        formats.add(EnvelopeFormat.standard());
      }
      formats.addAll(envelopes);
      return new DefaultIdempotentConsumer<>(
          store,
          consumerGroup,
          handler != null ? DefaultIdempotentConsumer.Handlers.of(handler)
              : DefaultIdempotentConsumer.Handlers.of(Objects.requireNonNull(batchHandler, "batchHandler")),
          formats.isEmpty() ? null : EnvelopeFormat.firstOf(formats.toArray(EnvelopeFormat[]::new)),
          keyExtractor,
          retryPolicy,
          oversizedKeys,
          detectPayloadConflicts,
          List.copyOf(listeners),
          outageErrorAfter,
          naturallyIdempotent,
          observationRegistry);
    }
  }
}
