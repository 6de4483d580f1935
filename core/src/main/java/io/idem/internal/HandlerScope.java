package io.idem.internal;

import io.idem.IdempotencyKey;
import io.idem.InboundMessage;
import io.idem.KeyedMessage;
import io.idem.TraceContext;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.slf4j.MDC;

/**
 * What the handler running on a thread is handling, for {@link TraceContext#forOutbox}, and the
 * SLF4J MDC entries around it ({@link #MDC_CONSUMER_GROUP}, {@link #MDC_SOURCE}, {@link #MDC_KEY}).
 * Set by {@link ClaimAndHandle} around each handler call and removed after it, whatever the
 * handler did. Without an observation registry the thread holds the {@link InboundMessage} or the
 * batch's list itself, so binding costs no allocation. Not API.
 */
public final class HandlerScope {
  /** MDC entry: the pipeline's consumer group. */
  public static final String MDC_CONSUMER_GROUP = "idem.consumerGroup";
  /** MDC entry: the topic or queue of the message(s) being handled. */
  public static final String MDC_SOURCE = "idem.source";
  /** MDC entry: the key value of the message being handled (not set for a batch handler). */
  public static final String MDC_KEY = "idem.key";

  /**
   * An {@link InboundMessage} (one message), a {@code List<KeyedMessage>} (a batch handler's
   * messages) or an {@link Injecting} frame (one message of an observed pipeline).
   */
  private static final ThreadLocal<@Nullable Object> CURRENT = new ThreadLocal<>();

  private HandlerScope() {}

  /** A frame that asks an observation registry for the context to propagate. */
  interface Injecting {
    @Nullable String traceparent(String idempotencyKey, String destination);
  }

  /**
   * Binds {@code frame} and sets the MDC.
   *
   * @param key the key of the one message handled, {@code null} for a batch handler
   * @return the frame bound before (a handler processing a message itself), for {@link #exit}
   */
  static @Nullable Object enter(Object frame, String consumerGroup, String source,
      @Nullable IdempotencyKey key) {
    Object previous = CURRENT.get();
    CURRENT.set(frame);
    MDC.put(MDC_CONSUMER_GROUP, consumerGroup);
    MDC.put(MDC_SOURCE, source);
    if (key != null) {
      MDC.put(MDC_KEY, key.value());
    } else {
      MDC.remove(MDC_KEY);
    }
    return previous;
  }

  /** Restores the frame bound before {@link #enter} and clears the MDC entries. */
  static void exit(@Nullable Object previous) {
    if (previous == null) {
      CURRENT.remove();
    } else {
      CURRENT.set(previous);
    }
    MDC.remove(MDC_CONSUMER_GROUP);
    MDC.remove(MDC_SOURCE);
    MDC.remove(MDC_KEY);
  }

  /** See {@link TraceContext#forOutbox}. */
  public static @Nullable String traceparent(String idempotencyKey, String destination) {
    Object frame = CURRENT.get();
    if (frame instanceof Injecting injecting) {
      return injecting.traceparent(idempotencyKey, destination);
    }
    return frame == null ? null : inbound(frame, idempotencyKey);
  }

  /** The valid {@code traceparent} header of the frame's message for {@code idempotencyKey}. */
  static @Nullable String inbound(Object frame, String idempotencyKey) {
    InboundMessage message = null;
    if (frame instanceof InboundMessage one) {
      message = one;
    } else if (frame instanceof List<?> batch) {
      if (batch.size() == 1) {
        message = ((KeyedMessage) batch.get(0)).message();
      } else {
        for (Object each : batch) {
          KeyedMessage keyed = (KeyedMessage) each;
          if (keyed.key().value().equals(idempotencyKey)) {
            message = keyed.message();
            break;
          }
        }
      }
    }
    if (message == null) {
      return null;
    }
    String value = message.header(TraceContext.TRACEPARENT);
    return TraceContext.isValid(value) ? value : null;
  }
}
