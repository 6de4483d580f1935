package io.idem;

import io.idem.internal.HandlerScope;
import org.jspecify.annotations.Nullable;

/**
 * The W3C trace context (<a href="https://www.w3.org/TR/trace-context/">Trace Context</a>, the
 * {@value #TRACEPARENT} header) of the message whose handler runs on the calling thread, for what
 * that handler emits: the transactional outbox stores it with each row it enqueues and every
 * outbox publisher sends it on, so that a trace runs inbound message → handler → outbox → published
 * message → downstream consumer (docs/METRICS.md, "Tracing"; docs/OUTBOX.md).
 *
 * <p>While a handler runs, the pipeline binds the message being handled to the thread (and the
 * SLF4J MDC entries {@code idem.consumerGroup}, {@code idem.source}, {@code idem.key}); outside a
 * handler there is none and every method here answers {@code null}. Static and thread-safe: each
 * thread sees its own handler's message only.
 */
public final class TraceContext {
  /** The W3C header, attribute or property name, {@value}: lower case, no '-' (a valid JMS property name). */
  public static final String TRACEPARENT = "traceparent";

  private TraceContext() {}

  /**
   * The {@code traceparent} for an outbox row the handler running on this thread enqueues, or
   * {@code null} outside a handler or when there is no valid one. With an {@code
   * ObservationRegistry} on the pipeline ({@link IdempotentConsumer.Builder#observationRegistry})
   * and a tracing bridge on it (Micrometer Tracing with OpenTelemetry or Brave), it is the
   * context of a short {@code idem.outbox.enqueue} producer observation, a child of the
   * message's processing observation; else (no registry, no tracer, or a batch's transaction) the
   * {@code traceparent} header of the message being handled, as received. A batch handler handles
   * several messages at once: the row then takes the header of the message whose key value is
   * {@code idempotencyKey} (of the only message, when the batch has one), else none.
   *
   * @param idempotencyKey the row's key (usually the handled message's key value)
   * @param destination the row's destination (a tag of the enqueue observation)
   */
  public static @Nullable String forOutbox(String idempotencyKey, String destination) {
    return HandlerScope.traceparent(idempotencyKey, destination);
  }

  /**
   * Whether {@code value} is a usable W3C {@code traceparent}: {@code version-traceid-parentid-flags}
   * in lower-case hex (2-32-16-2 digits), version not {@code ff} (version {@code 00}: exactly 55
   * characters; a later version may append fields), trace id and parent id not all zeros.
   */
  public static boolean isValid(@Nullable String value) {
    if (value == null || value.length() < 55 || value.length() > 512) {
      return false;
    }
    if (!hex(value, 0, 2) || value.charAt(2) != '-' || !hex(value, 3, 35) || value.charAt(35) != '-'
        || !hex(value, 36, 52) || value.charAt(52) != '-' || !hex(value, 53, 55)) {
      return false;
    }
    if (value.startsWith("ff") || (value.startsWith("00") && value.length() != 55)
        || (value.length() > 55 && value.charAt(55) != '-')) {
      return false;
    }
    return !zeros(value, 3, 35) && !zeros(value, 36, 52);
  }

  /** The 32-digit trace id of a valid {@code traceparent}, else {@code null}. */
  public static @Nullable String traceId(@Nullable String traceparent) {
    return traceparent != null && isValid(traceparent) ? traceparent.substring(3, 35) : null;
  }

  private static boolean hex(String value, int from, int to) {
    for (int i = from; i < to; i++) {
      char c = value.charAt(i);
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
        return false;
      }
    }
    return true;
  }

  private static boolean zeros(String value, int from, int to) {
    for (int i = from; i < to; i++) {
      if (value.charAt(i) != '0') {
        return false;
      }
    }
    return true;
  }
}
