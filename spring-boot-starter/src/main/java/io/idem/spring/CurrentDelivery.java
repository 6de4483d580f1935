package io.idem.spring;

import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The delivery a listener container is handing to an {@link Idempotent} method on this thread, as
 * the container received it (a Kafka {@code ConsumerRecord} or the poll's records, a Spring AMQP
 * {@code Message}, a {@code jakarta.jms.Message}, a Spring Cloud AWS {@code Message} carrying the
 * SQS message): set by Idem's wrapper around the container's listener ({@link
 * IdempotentListenerContainers}) just before the container converts it for the method, read by
 * {@link IdempotentListenerInterceptor} when the method takes a converted payload ({@code @Payload}
 * POJO, {@code String}, {@code byte[]}, headers) instead of the native message. Thread-confined.
 */
final class CurrentDelivery {
  private static final ThreadLocal<@Nullable CurrentDelivery> CURRENT = new ThreadLocal<>();

  private final String kind;
  private final Object message;
  private final @Nullable KafkaBudget budget;
  private final @Nullable KafkaAssignments assignments;
  private boolean reached;

  private CurrentDelivery(String kind, Object message, @Nullable KafkaBudget budget,
      @Nullable KafkaAssignments assignments) {
    this.kind = kind;
    this.message = message;
    this.budget = budget;
    this.assignments = assignments;
  }

  /** What the container hands over: one native message, or (Kafka batch) the list of records. */
  Object message() {
    return message;
  }

  /** The kind ({@code kafka}, {@code rabbitmq}, {@code jms}, {@code sqs}) of the container. */
  String kind() {
    return kind;
  }

  /** Kafka only: how long the call may hold the records before it must hand them back. */
  @Nullable KafkaBudget budget() {
    return budget;
  }

  /**
   * Kafka only: which records of the container's partitions may have been run before, uncounted
   * (the partition not yet settled by an applied record in this life).
   */
  @Nullable KafkaAssignments assignments() {
    return assignments;
  }

  /** Whether an {@code @Idempotent} method was reached with this delivery (so Idem settled it). */
  boolean reached() {
    return reached;
  }

  void markReached() {
    reached = true;
  }

  /** The delivery of this thread, or {@code null} when no Idem-wrapped container is calling. */
  static @Nullable CurrentDelivery get() {
    return CURRENT.get();
  }

  /**
   * Runs {@code body} with {@code message} as this thread's delivery, restoring the previous one
   * afterwards.
   */
  static <T> T with(String kind, Object message, @Nullable KafkaBudget budget, Body<T> body)
      throws Exception {
    return with(kind, message, budget, null, body);
  }

  /**
   * Runs {@code body} with {@code message} as this thread's delivery of a Kafka container whose
   * partitions {@code assignments} tracks, restoring the previous one afterwards.
   */
  static <T> T with(String kind, Object message, @Nullable KafkaBudget budget,
      @Nullable KafkaAssignments assignments, Body<T> body) throws Exception {
    CurrentDelivery previous = CURRENT.get();
    CurrentDelivery current = new CurrentDelivery(kind, message, budget, assignments);
    CURRENT.set(current);
    try {
      return body.run(current);
    } finally {
      if (previous == null) {
        CURRENT.remove();
      } else {
        CURRENT.set(previous);
      }
    }
  }

  /** The container's own handling of the delivery, with the capture in place. */
  @FunctionalInterface
  interface Body<T> {
    T run(CurrentDelivery delivery) throws Exception;
  }

  /** {@link #message()} as a list, for a batch. */
  @SuppressWarnings("unchecked")
  List<Object> batch() {
    return (List<Object>) message;
  }
}
