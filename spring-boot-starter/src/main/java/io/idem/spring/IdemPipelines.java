package io.idem.spring;

import io.idem.BatchMessageHandler;
import io.idem.IdempotencyKeyExtractor;
import io.idem.IdempotencyListener;
import io.idem.IdempotentConsumer;
import io.idem.KeyedMessageHandler;
import io.idem.MessageHandler;
import io.idem.StoreHealth;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import org.apache.ibatis.session.SqlSession;
import org.jspecify.annotations.Nullable;

/**
 * The Idem pipelines of the application, one per consumer group, all on the one {@link
 * SpringTransactionStore} and configured from {@link IdemProperties} (key extraction, retry
 * policy) — built on first use and kept. Each pipeline's handler runs the {@link
 * MessageHandler} the caller passes to {@link #handlerScope}, so one pipeline serves every
 * listener method of its group.
 *
 * <p>Thread-safe.
 */
public final class IdemPipelines {
  private static final ThreadLocal<@Nullable MessageHandler<SqlSession>> CURRENT = new ThreadLocal<>();
  private static final ThreadLocal<@Nullable BatchMessageHandler<SqlSession>> CURRENT_BATCH = new ThreadLocal<>();
  private static final ThreadLocal<io.idem.@Nullable IdempotencyKey> CURRENT_KEY = new ThreadLocal<>();

  /**
   * The key Idem claimed for the message whose {@code @Idempotent} method is running on this
   * thread, or {@code null} outside one (and in a batch listener, whose call covers several keys).
   */
  static io.idem.@Nullable IdempotencyKey currentKey() {
    return CURRENT_KEY.get();
  }

  private final SpringTransactionStore store;
  private final IdemProperties properties;
  private final Function<String, @Nullable IdempotencyListener> listeners;
  private final Map<String, IdempotentConsumer<SqlSession>> pipelines = new ConcurrentHashMap<>();
  private final Map<String, IdempotentConsumer<SqlSession>> methodPipelines = new ConcurrentHashMap<>();

  /**
   * @param listeners the listener of a consumer group ({@code MicrometerIdempotencyListener} when
   *     the application has a {@code MeterRegistry}), or {@code null} for none
   */
  public IdemPipelines(SpringTransactionStore store, IdemProperties properties,
      Function<String, @Nullable IdempotencyListener> listeners) {
    this.store = Objects.requireNonNull(store, "store");
    this.properties = Objects.requireNonNull(properties, "properties");
    this.listeners = Objects.requireNonNull(listeners, "listeners");
    // the pipelines are built on first use; their settings are checked now, so that a wrong one
    // (idem.retry.max-attempts=0, say) stops the application at start instead of failing every
    // message — which Spring Kafka's default error handler would then skip
    try {
      properties.getRetry().toPolicy();
      keyExtractor();
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("invalid idem.* setting: " + e.getMessage(), e);
    }
  }

  /** The store every pipeline runs on. */
  public SpringTransactionStore store() {
    return store;
  }

  /**
   * The pipeline of {@code consumerGroup}, built on first use.
   *
   * @throws IllegalArgumentException when the group is not a valid consumer group
   */
  public IdempotentConsumer<SqlSession> pipeline(String consumerGroup) {
    return pipelines.computeIfAbsent(consumerGroup, this::build);
  }

  /**
   * The pipeline of {@code consumerGroup} for a method whose key is read as {@code key} says
   * ({@link MethodKey#DEFAULT}: {@link #pipeline(String)}), built on first use; with {@code
   * batch}, one whose handler is the method called once with a batch's new messages.
   */
  IdempotentConsumer<SqlSession> pipeline(String consumerGroup, MethodKey key, boolean batch) {
    if (key.extractor() == null && !batch) {
      return pipeline(consumerGroup);
    }
    return methodPipelines.computeIfAbsent(consumerGroup + "\u0000" + key.id() + (batch ? "\u0000batch" : ""),
        k -> build(consumerGroup, key.extractor() == null ? keyExtractor() : key.extractor(), batch));
  }

  /** The store health of each pipeline built so far, by consumer group. */
  public Map<String, StoreHealth> storeHealth() {
    Map<String, StoreHealth> health = new java.util.TreeMap<>();
    pipelines.forEach((group, pipeline) -> health.put(group, pipeline.storeHealth()));
    return health;
  }

  /**
   * Runs {@code body} with {@code handler} as the handler of every pipeline on this thread, so
   * that a {@link IdempotentConsumer#process} call inside it runs {@code handler} after the
   * claim.
   */
  static <T> T handlerScope(MessageHandler<SqlSession> handler, java.util.function.Supplier<T> body) {
    MessageHandler<SqlSession> previous = CURRENT.get();
    CURRENT.set(handler);
    try {
      return body.get();
    } finally {
      if (previous == null) {
        CURRENT.remove();
      } else {
        CURRENT.set(previous);
      }
    }
  }

  /**
   * Runs {@code body} with {@code handler} as the batch handler of every batch pipeline on this
   * thread ({@link #pipeline(String, MethodKey, boolean)} with {@code batch}).
   */
  static <T> T batchHandlerScope(BatchMessageHandler<SqlSession> handler, java.util.function.Supplier<T> body) {
    BatchMessageHandler<SqlSession> previous = CURRENT_BATCH.get();
    CURRENT_BATCH.set(handler);
    try {
      return body.get();
    } finally {
      if (previous == null) {
        CURRENT_BATCH.remove();
      } else {
        CURRENT_BATCH.set(previous);
      }
    }
  }

  /**
   * A new pipeline of {@code consumerGroup} that runs {@code handler} — for a consumer of
   * {@code idem.consumers.*} — configured like the others ({@code idem.key.*}, {@code
   * idem.retry.*}, the group's listener). Not cached.
   *
   * @param handler a {@link MessageHandler} or {@link KeyedMessageHandler} of {@link SqlSession}
   * @throws IllegalArgumentException when the group is not a valid consumer group
   */
  public IdempotentConsumer<SqlSession> pipeline(String consumerGroup, Object handler) {
    IdempotentConsumer.Builder<SqlSession> builder = configured(consumerGroup);
    if (handler instanceof KeyedMessageHandler<?> keyed) {
      @SuppressWarnings("unchecked")
      KeyedMessageHandler<SqlSession> typed = (KeyedMessageHandler<SqlSession>) keyed;
      builder.handler(typed);
    } else if (handler instanceof MessageHandler<?> plain) {
      @SuppressWarnings("unchecked")
      MessageHandler<SqlSession> typed = (MessageHandler<SqlSession>) plain;
      builder.handler(typed);
    } else {
      throw new IllegalArgumentException("the handler of consumer group '" + consumerGroup
          + "' must be a MessageHandler<SqlSession> or KeyedMessageHandler<SqlSession>, but is a "
          + handler.getClass().getName());
    }
    return builder.build();
  }

  private IdempotentConsumer<SqlSession> build(String consumerGroup) {
    return build(consumerGroup, keyExtractor(), false);
  }

  private IdempotentConsumer<SqlSession> build(String consumerGroup, IdempotencyKeyExtractor extractor,
      boolean batch) {
    IdempotentConsumer.Builder<SqlSession> builder = configured(consumerGroup).keyExtractor(extractor);
    if (batch) {
      return builder.batchHandler((messages, session) -> {
        BatchMessageHandler<SqlSession> handler = CURRENT_BATCH.get();
        if (handler == null) {
          throw new IllegalStateException("no @Idempotent batch listener method is running on this"
              + " thread for consumer group '" + consumerGroup + "'");
        }
        handler.handle(messages, session);
      }).build();
    }
    return builder
        .handler((key, message, session) -> {
          MessageHandler<SqlSession> handler = CURRENT.get();
          if (handler == null) {
            throw new IllegalStateException("no @Idempotent listener method is running on this"
                + " thread for consumer group '" + consumerGroup + "'");
          }
          io.idem.IdempotencyKey previous = CURRENT_KEY.get();
          CURRENT_KEY.set(key);
          try {
            handler.handle(message, session);
          } finally {
            CURRENT_KEY.set(previous);
          }
        })
        .build();
  }

  private IdempotentConsumer.Builder<SqlSession> configured(String consumerGroup) {
    IdempotentConsumer.Builder<SqlSession> builder = IdempotentConsumer.builder(store)
        .consumerGroup(consumerGroup)
        .keyExtractor(keyExtractor())
        .retryPolicy(properties.getRetry().toPolicy());
    IdempotencyListener listener = listeners.apply(consumerGroup);
    if (listener != null) {
      builder.listener(listener);
    }
    return builder;
  }

  private IdempotencyKeyExtractor keyExtractor() {
    IdemProperties.Key key = properties.getKey();
    if (key.getHeader() != null && key.getJsonPointer() != null) {
      return IdempotencyKeyExtractor.firstOf(IdempotencyKeyExtractor.header(key.getHeader()),
          IdempotencyKeyExtractor.jsonPointer(key.getJsonPointer()));
    }
    if (key.getHeader() != null) {
      return IdempotencyKeyExtractor.header(key.getHeader());
    }
    if (key.getJsonPointer() != null) {
      return IdempotencyKeyExtractor.jsonPointer(key.getJsonPointer());
    }
    return IdempotencyKeyExtractor.defaults();
  }
}
