package io.idem.spring;

import io.idem.DeadLetterReason;
import io.idem.InboundMessage;
import java.lang.reflect.Method;
import org.jspecify.annotations.Nullable;

/**
 * What the drop-in path needs from one kind of Spring listener container: whether a method is
 * this kind's listener, its native message as Idem's {@link InboundMessage}, a stable identity for
 * counting attempts, how to copy it to a dead-letter destination, and how to hand it back to the
 * container. One implementation per container kind, loaded only when its library is on the
 * classpath. Thread-safe.
 */
interface ListenerDeliveries {

  /** The container kind, for messages: {@code kafka}, {@code rabbitmq}, {@code jms}, {@code sqs}. */
  String kind();

  /** Whether {@code method} carries this kind's listener annotation (on itself or, for handler methods, its class). */
  boolean isListener(Method method);

  /** Whether a parameter of {@code type} of the listener {@code method} is this kind's native message. */
  boolean accepts(Method method, Class<?> type);

  /** Whether a listener parameter of {@code type} would let the method acknowledge by itself. */
  boolean acknowledgesByItself(Class<?> type);

  /**
   * Why {@code method}'s own listener settings would acknowledge before Idem's commit, or {@code
   * null} when they would not.
   */
  default @Nullable String refusal(Method method) {
    return null;
  }

  /** Identifies the delivery across redeliveries (Kafka topic-partition@offset, a message id). */
  String deliveryId(Object message);

  /**
   * The delivery as Idem sees it.
   *
   * @throws IllegalStateException when the payload cannot be read as bytes (say which)
   */
  InboundMessage toInbound(Object message, int attempt, boolean unaccounted);

  /**
   * Whether the broker says {@code message} may have been delivered before (RabbitMQ {@code
   * redelivered}, JMS {@code JMSRedelivered}, SQS {@code ApproximateReceiveCount} above 1): a
   * delivery {@link ListenerAttempts} does not know is then an unaccounted redelivery ({@link
   * InboundMessage#unaccountedRedelivery()}), its attempt counted in the store before the handler
   * runs, so that a message whose handler killed the process is dead-lettered after at most
   * maxAttempts deaths (docs/FAILURES.md, "Attempts that survive the process"). Default {@code false}
   * (Kafka, which has no such flag: {@link KafkaAssignments} flags the records of a partition
   * from its assignment until one of them is applied).
   */
  default boolean deliveredBefore(Object message) {
    return false;
  }

  /**
   * Copies {@code message} with the reason headers to {@code destination} (or the kind's default
   * when {@code null}) and returns once the broker has it.
   *
   * @throws RuntimeException when the copy was not stored: the container redelivers the original
   */
  void deadLetter(Object message, DeadLetterReason reason, @Nullable String destination);

  /**
   * What to throw so that this kind's container gets the delivery back whatever its own settings:
   * {@code retry} itself by default; RabbitMQ wraps it in Spring AMQP's {@code
   * ImmediateRequeueAmqpException} (requeued even with {@code defaultRequeueRejected=false}).
   */
  default RuntimeException handBack(IdempotentRetryException retry) {
    return retry;
  }

  /**
   * Whether Idem retries inside the call instead of handing the delivery back after each failure
   * (Kafka: Spring Kafka's error handler must never see a message Idem still retries).
   */
  default boolean retriesInCall() {
    return false;
  }

  /**
   * Runs a batch listener's call (Kafka only: the records of one poll).
   *
   * @throws IllegalStateException for kinds without batch support
   */
  default @Nullable Object invokeBatch(IdempotentListenerInterceptor.BatchCall call) throws Throwable {
    throw new IllegalStateException(call.binding.name() + ": Idem takes batch listeners on Kafka"
        + " only; take one message per call on " + kind());
  }
}
