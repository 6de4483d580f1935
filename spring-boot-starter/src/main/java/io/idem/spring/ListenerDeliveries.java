package io.idem.spring;

import io.idem.DeadLetterReason;
import io.idem.InboundMessage;
import org.jspecify.annotations.Nullable;

/**
 * What the drop-in path needs from one kind of Spring listener container's native message: the
 * message as Idem's {@link InboundMessage}, a stable identity for counting attempts, and how to
 * copy it to a dead-letter destination. One implementation per container kind, loaded only when
 * its library is on the classpath. Thread-safe.
 */
interface ListenerDeliveries {

  /** The container kind, for messages: {@code kafka}, {@code rabbitmq}, {@code jms}. */
  String kind();

  /** Whether a parameter of {@code type} of the listener {@code method} is this kind's native message. */
  boolean accepts(java.lang.reflect.Method method, Class<?> type);

  /** Whether a listener parameter of {@code type} would let the method acknowledge by itself. */
  boolean acknowledgesByItself(Class<?> type);

  /**
   * Why {@code method}'s own listener settings would acknowledge before Idem's commit, or {@code
   * null} when they would not.
   */
  default @Nullable String refusal(java.lang.reflect.Method method) {
    return null;
  }

  /** Identifies the delivery across redeliveries (Kafka topic-partition@offset, a message id). */
  String deliveryId(Object message);

  /** The broker's own delivery count (1 for the first), or 0 when the broker gives none. */
  int brokerAttempt(Object message);

  /**
   * The delivery as Idem sees it.
   *
   * @throws IllegalStateException when the payload cannot be read as bytes (say which)
   */
  InboundMessage toInbound(Object message, int attempt);

  /**
   * Copies {@code message} with the reason headers to {@code destination} (or the kind's default
   * when {@code null}) and returns once the broker has it.
   *
   * @throws RuntimeException when the copy was not stored: the container redelivers the original
   */
  void deadLetter(Object message, DeadLetterReason reason, @Nullable String destination);
}
