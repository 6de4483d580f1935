package io.idem.internal;

import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import io.idem.TraceContext;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.observation.transport.ReceiverContext;
import io.micrometer.observation.transport.SenderContext;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * {@link Tracing} through a Micrometer {@link ObservationRegistry} (docs/METRICS.md, "Tracing").
 * Loaded only when the builder was given a registry. Thread-safe.
 */
public final class ObservedTracing implements Tracing {
  /** One keyed message's way through the pipeline: claim, handler, commit, acknowledgement. */
  public static final String CONSUME = "idem.consume";
  /** One batch's transaction and settlement ({@code processBatch}). */
  public static final String CONSUME_BATCH = "idem.consume.batch";
  /** An outbox row enqueued by a handler: the context its published copies carry. */
  public static final String OUTBOX_ENQUEUE = "idem.outbox.enqueue";

  public static final String TAG_CONSUMER_GROUP = "idem.consumer.group";
  public static final String TAG_SOURCE = "idem.source";
  public static final String TAG_OUTCOME = "idem.outcome";
  public static final String TAG_DESTINATION = "idem.destination";
  public static final String TAG_KEY = "idem.key";
  public static final String TAG_BATCH_SIZE = "idem.batch.size";

  /** {@link #TAG_OUTCOME} when the call threw (the acknowledgement failed: the delivery stays unsettled). */
  public static final String UNSETTLED = "UNSETTLED";

  static final Observation.Event CLAIM = Observation.Event.of("idem.claim", "claim");
  static final Observation.Event HANDLER = Observation.Event.of("idem.handler", "handler returned");
  static final Observation.Event COMMIT = Observation.Event.of("idem.commit", "committed");
  static final Observation.Event ACK = Observation.Event.of("idem.ack", "broker told");

  private final ObservationRegistry registry;
  private final String consumerGroup;
  private final IdempotencyListener events = new Events();

  private ObservedTracing(ObservationRegistry registry, String consumerGroup) {
    this.registry = registry;
    this.consumerGroup = consumerGroup;
  }

  /** @param registry an {@link ObservationRegistry} (typed {@code Object} for the builder) */
  static Tracing of(Object registry, String consumerGroup) {
    return new ObservedTracing((ObservationRegistry) Objects.requireNonNull(registry, "registry"),
        consumerGroup);
  }

  /** The receiver side: the inbound {@code traceparent} header is the remote parent. */
  static final class ConsumeContext extends ReceiverContext<InboundMessage> {
    ConsumeContext(InboundMessage message) {
      super((carrier, name) -> carrier.header(name));
      setCarrier(message);
    }
  }

  /** The sender side of an enqueue: a tracing bridge injects the headers into the map. */
  static final class EnqueueContext extends SenderContext<Map<String, String>> {
    EnqueueContext() {
      super((carrier, name, value) -> {
        if (carrier != null) {
          carrier.put(name, value);
        }
      });
      setCarrier(new HashMap<>());
    }
  }

  @Override
  public Span start(InboundMessage message, IdempotencyKey key) {
    ConsumeContext context = new ConsumeContext(message);
    Observation observation = Observation.createNotStarted(CONSUME, () -> context, registry)
        .contextualName(message.source() + " process")
        .lowCardinalityKeyValue(TAG_CONSUMER_GROUP, consumerGroup)
        .lowCardinalityKeyValue(TAG_SOURCE, message.source())
        .highCardinalityKeyValue(TAG_KEY, key.value())
        .start();
    return new Open(observation, observation.openScope());
  }

  @Override
  public Span startBatch(String source, int size) {
    Observation observation = Observation.createNotStarted(CONSUME_BATCH, registry)
        .contextualName(source + " process batch")
        .lowCardinalityKeyValue(TAG_CONSUMER_GROUP, consumerGroup)
        .lowCardinalityKeyValue(TAG_SOURCE, source)
        .highCardinalityKeyValue(TAG_BATCH_SIZE, Integer.toString(size))
        .start();
    return new Open(observation, observation.openScope());
  }

  @Override
  public Object frame(Object messages) {
    return new Frame(messages);
  }

  @Override
  public IdempotencyListener events() {
    return events;
  }

  private record Open(Observation observation, Observation.Scope scope) implements Span {
    @Override
    public void stop(@Nullable ProcessingOutcome outcome, @Nullable Throwable failure) {
      try {
        scope.close();
        if (observation.getContext() instanceof ConsumeContext) {
          observation.lowCardinalityKeyValue(TAG_OUTCOME, outcome != null ? outcome.name() : UNSETTLED);
        }
        if (failure != null) {
          observation.error(failure);
        }
      } finally {
        observation.stop();
      }
    }
  }

  /**
   * One message's handler in its own transaction: an enqueue is a child observation whose
   * propagated {@code traceparent} (when a tracing bridge injected one) the row takes.
   */
  private final class Frame implements HandlerScope.Injecting {
    private final Object messages;

    Frame(Object messages) {
      this.messages = messages;
    }

    @Override
    public @Nullable String traceparent(String idempotencyKey, String destination) {
      String inbound = HandlerScope.inbound(messages, idempotencyKey);
      Observation parent = registry.getCurrentObservation();
      if (parent == null) {
        return inbound;
      }
      EnqueueContext context = new EnqueueContext();
      Observation.createNotStarted(OUTBOX_ENQUEUE, () -> context, registry)
          .contextualName(destination + " enqueue")
          .parentObservation(parent)
          .lowCardinalityKeyValue(TAG_CONSUMER_GROUP, consumerGroup)
          .lowCardinalityKeyValue(TAG_DESTINATION, destination)
          .highCardinalityKeyValue(TAG_KEY, idempotencyKey)
          .start()
          .stop();
      Map<String, String> carrier = context.getCarrier();
      String injected = carrier == null ? null : carrier.get(TraceContext.TRACEPARENT);
      return TraceContext.isValid(injected) ? injected : inbound;
    }
  }

  /** The steps of the current {@link #CONSUME} observation of that message, as its events. */
  private final class Events implements IdempotencyListener {
    private void event(InboundMessage message, Observation.Event event) {
      Observation current = registry.getCurrentObservation();
      if (current != null && current.getContext() instanceof ConsumeContext context
          && context.getCarrier() == message) {
        current.event(event);
      }
    }

    @Override
    public void beforeClaim(InboundMessage message, IdempotencyKey key) {
      event(message, CLAIM);
    }

    @Override
    public void afterHandler(InboundMessage message, IdempotencyKey key) {
      event(message, HANDLER);
    }

    @Override
    public void afterCommit(InboundMessage message, IdempotencyKey key, ProcessingOutcome pending) {
      event(message, COMMIT);
    }

    @Override
    public void onOutcome(InboundMessage message, @Nullable IdempotencyKey key,
        ProcessingOutcome outcome, Duration elapsed) {
      event(message, ACK);
    }
  }

  @Override
  public String toString() {
    return "ObservedTracing[" + registry + "]";
  }
}
