package io.idem.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Makes a Spring listener method idempotent: on a {@code @KafkaListener}, {@code @RabbitListener},
 * {@code @JmsListener} or Spring Cloud AWS {@code @SqsListener} method that takes the container's
 * native message — Kafka's {@code ConsumerRecord} (String or byte[] value), Spring AMQP's {@code
 * Message}, a {@code jakarta.jms.Message} (text or bytes), or on an {@code @SqsListener} a Spring
 * {@code Message} — Idem extracts the key, opens its transaction through the
 * application's transaction manager, claims the key and runs the method's body in that
 * transaction, so the body's {@code JdbcTemplate}/JPA/MyBatis-Spring writes commit with the
 * processed-events marker. The method then returns normally (for a duplicate without running the
 * body, returning {@code null}), and the container acknowledges after Idem's commit.
 *
 * <p>Retries and dead letters are decided by Idem's {@code RetryPolicy} ({@code idem.retry.*}):
 * a failure not yet out of attempts waits the policy's backoff on the listener thread and is thrown
 * to the container as an {@link IdempotentRetryException} so that it redelivers; a message out of
 * attempts, without a key, or whose key was committed with another payload is copied to the
 * dead-letter destination with the reason headers and the method returns normally. Spring's own
 * retry (Kafka's {@code DefaultErrorHandler}, AMQP retry interceptors, JMS redelivery) must allow
 * at least as many deliveries as {@code idem.retry.max-attempts} (docs/SPRING-BOOT.md).
 *
 * <p>Refused at start-up (the application context fails with the reason): a method without one of
 * the native message parameters above, a method that takes Kafka's {@code Acknowledgment} or an
 * AMQP {@code Channel} (it could acknowledge before Idem's commit), a RabbitMQ container with
 * {@code AcknowledgeMode.NONE}, a JMS {@code DefaultMessageListenerContainer} that is neither
 * transacted nor in {@code CLIENT_ACKNOWLEDGE} mode (in {@code AUTO_ACKNOWLEDGE} and {@code
 * DUPS_OK_ACKNOWLEDGE} it acknowledges at receive, before the method runs), and a Kafka container
 * with a transaction manager. At run time, a method called inside a Spring transaction (which Idem
 * does not own) is refused with an {@link IllegalStateException}, nothing claimed.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface Idempotent {

  /** The consumer group of the keys; empty: {@code idem.consumer-group}. */
  String consumerGroup() default "";

  /**
   * Where dead letters go: a Kafka topic (default {@code <topic>.DLT}), a RabbitMQ queue reached
   * through the default exchange (default {@code <queue>.dlq}), a JMS queue (default {@code
   * <queue>.dlq}), or an SQS queue name (default {@code <queue>-dlq}). It must exist.
   */
  String deadLetter() default "";
}
