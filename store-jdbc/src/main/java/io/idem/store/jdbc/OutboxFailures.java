package io.idem.store.jdbc;

import io.idem.NonRetryableException;
import io.idem.RetryPolicy;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * The relay's reading of what a publisher threw: the cause chain unwrapped ({@link
 * ExecutionException}, {@link CompletionException}, any wrapper), its {@link OutboxFailureKind},
 * and whether a retry can succeed. Broker clients are recognised by class name, so that this
 * module needs none of them: Kafka ({@code org.apache.kafka.common.errors}), RabbitMQ ({@code
 * com.rabbitmq.client}), the AWS SDK ({@code software.amazon.awssdk}) and ActiveMQ Artemis. Stateless
 * and thread-safe.
 */
public final class OutboxFailures {
  private static final String KAFKA = "org.apache.kafka.common.errors.";
  private static final String ARTEMIS = "org.apache.activemq.artemis.api.core.";

  /** JDK types that mean the destination did not answer (every subclass too). */
  private static final List<Class<?>> UNAVAILABLE_TYPES = List.of(java.net.ConnectException.class,
      java.net.NoRouteToHostException.class, java.net.UnknownHostException.class,
      java.net.SocketTimeoutException.class, java.net.PortUnreachableException.class,
      java.util.concurrent.TimeoutException.class, java.net.http.HttpTimeoutException.class);

  /** Broker clients' types that mean the destination did not answer (every subclass too). */
  private static final Set<String> UNAVAILABLE_NAMES = Set.of(
      KAFKA + "RetriableException", // TimeoutException (metadata not available), NetworkException, NotEnoughReplicas, …
      KAFKA + "BrokerNotAvailableException",
      "software.amazon.awssdk.core.exception.SdkClientException", // no response: connect, timeouts
      ARTEMIS + "ActiveMQNotConnectedException", ARTEMIS + "ActiveMQConnectionTimedOutException",
      ARTEMIS + "ActiveMQDisconnectedException", ARTEMIS + "ActiveMQUnBlockedException");

  /** Broker clients' types no retry can get through (every subclass too). */
  private static final Set<String> NON_RETRYABLE_NAMES = Set.of(
      KAFKA + "RecordTooLargeException", KAFKA + "RecordBatchTooLargeException",
      KAFKA + "InvalidTopicException", KAFKA + "InvalidRecordException",
      KAFKA + "TopicAuthorizationException", "org.apache.kafka.common.errors.SerializationException");

  private OutboxFailures() {}

  /**
   * {@code failure} and its causes, outermost first (a cycle is cut, a {@code
   * jakarta.jms.JMSException}'s linked exception followed when it has no cause).
   */
  public static List<Throwable> causes(Throwable failure) {
    Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
    List<Throwable> chain = new ArrayList<>();
    for (Throwable t = failure; t != null && seen.add(t); t = next(t)) {
      chain.add(t);
    }
    return chain;
  }

  /**
   * The default classification: {@link OutboxFailureKind#DESTINATION_UNAVAILABLE} when any
   * exception in the chain is a connection or timeout failure (the JDK's {@code ConnectException},
   * {@code SocketTimeoutException}, {@code UnknownHostException}, {@code TimeoutException}; Kafka's
   * {@code RetriableException} family — a {@code TimeoutException} because metadata or the broker
   * is not available, {@code NetworkException}, {@code NotEnoughReplicasException} — and {@code
   * BrokerNotAvailableException}; RabbitMQ's {@code ShutdownSignalException}/{@code
   * AlreadyClosedException} of a connection-level (hard) shutdown; the AWS SDK's {@code
   * SdkClientException} (no response) and an {@code AwsServiceException} with HTTP status 5xx or
   * throttling; Artemis' not-connected, timed-out, disconnected); otherwise {@link
   * OutboxFailureKind#ROW}. A chain that also carries a non-retryable type ({@link
   * #isRetryable}) is a row failure, whatever wraps it.
   */
  public static OutboxFailureKind classify(Throwable failure) {
    List<Throwable> chain = causes(failure);
    for (Throwable t : chain) {
      if (t instanceof NonRetryableException || isA(t, NON_RETRYABLE_NAMES)) {
        return OutboxFailureKind.ROW;
      }
    }
    for (Throwable t : chain) {
      if (unavailable(t)) {
        return OutboxFailureKind.DESTINATION_UNAVAILABLE;
      }
    }
    return OutboxFailureKind.ROW;
  }

  /**
   * Whether another attempt of the row can succeed: false when any exception in the chain is a
   * {@link NonRetryableException}, one of {@code policy}'s {@link RetryPolicy#isRetryable
   * non-retryable} types (or an integrity violation), or a broker client's own refusal for good:
   * Kafka's {@code RecordTooLargeException}, {@code RecordBatchTooLargeException}, {@code
   * InvalidTopicException}, {@code InvalidRecordException}, {@code TopicAuthorizationException},
   * {@code SerializationException}.
   */
  public static boolean isRetryable(Throwable failure, RetryPolicy policy) {
    for (Throwable t : causes(failure)) {
      if (!policy.isRetryable(t) || isA(t, NON_RETRYABLE_NAMES)) {
        return false;
      }
    }
    return true;
  }

  /**
   * {@code custom} first (for a publisher of one's own), the default when it returns {@code null}.
   */
  static Function<Throwable, OutboxFailureKind> withDefault(
      Function<Throwable, @Nullable OutboxFailureKind> custom) {
    return failure -> {
      OutboxFailureKind kind = custom.apply(failure);
      return kind != null ? kind : classify(failure);
    };
  }

  private static boolean unavailable(Throwable t) {
    for (Class<?> type : UNAVAILABLE_TYPES) {
      if (type.isInstance(t)) {
        return true;
      }
    }
    if (isA(t, UNAVAILABLE_NAMES)) {
      return true;
    }
    if (isA(t, Set.of("com.rabbitmq.client.ShutdownSignalException"))) {
      // A connection-level (hard) shutdown: the broker went away or closed the connection. A
      // channel-level one (404 on the exchange, a refused argument) is this row's failure.
      return Boolean.TRUE.equals(invoke(t, "isHardError"));
    }
    if (isA(t, Set.of("software.amazon.awssdk.awscore.exception.AwsServiceException"))) {
      Object status = invoke(t, "statusCode");
      return (status instanceof Integer s && s >= 500) || Boolean.TRUE.equals(invoke(t, "isThrottlingException"));
    }
    return false;
  }

  /** True when {@code t}'s class or a superclass has one of {@code names}. */
  private static boolean isA(Throwable t, Set<String> names) {
    for (Class<?> c = t.getClass(); c != null && c != Object.class; c = c.getSuperclass()) {
      if (names.contains(c.getName())) {
        return true;
      }
    }
    return false;
  }

  private static @Nullable Throwable next(Throwable t) {
    if (t.getCause() != null) {
      return t.getCause();
    }
    Object linked = isA(t, Set.of("jakarta.jms.JMSException", "javax.jms.JMSException"))
        ? invoke(t, "getLinkedException") : null;
    return linked instanceof Throwable l ? l : null;
  }

  private static @Nullable Object invoke(Throwable t, String method) {
    try {
      return t.getClass().getMethod(method).invoke(t);
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      return null;
    }
  }
}
