package io.idem.internal;

import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import org.jspecify.annotations.Nullable;

/**
 * The pipeline's observations (docs/METRICS.md, "Tracing"), free of Micrometer types so that the
 * pipeline loads without micrometer-observation on the classpath: {@link #NONE} when the builder
 * was given no registry (no observation, nothing allocated), {@link ObservedTracing} otherwise.
 */
interface Tracing {
  Tracing NONE = new Tracing() {};

  /** An open observation; {@link #stop} ends it. */
  interface Span {
    /**
     * @param outcome the outcome returned, {@code null} when the call threw
     * @param failure what the call threw, else {@code null}
     */
    void stop(@Nullable ProcessingOutcome outcome, @Nullable Throwable failure);
  }

  /** Starts (and makes current) the processing observation of one keyed message; {@code null}: none. */
  default @Nullable Span start(InboundMessage message, IdempotencyKey key) {
    return null;
  }

  /** Starts (and makes current) a batch's observation; {@code null}: none. */
  default @Nullable Span startBatch(String source, int size) {
    return null;
  }

  /**
   * What {@link HandlerScope} binds while the handler of one message's own transaction runs:
   * {@code messages} (the message, or a batch handler's one-element list) itself when not
   * observed.
   */
  default Object frame(Object messages) {
    return messages;
  }

  /** The listener that turns the pipeline's steps into the observation's events, or {@code null}. */
  default @Nullable IdempotencyListener events() {
    return null;
  }
}
