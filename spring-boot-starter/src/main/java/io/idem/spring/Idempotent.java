package io.idem.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Makes a Spring listener method idempotent: on a {@code @KafkaListener}, {@code @RabbitListener},
 * {@code @JmsListener} or Spring Cloud AWS {@code @SqsListener} method written as Spring users
 * write them — taking a {@code @Payload} POJO, {@code String} or {@code byte[]}, {@code @Header}
 * values, {@code MessageHeaders} or a Spring {@code Message<?>}, or the container's native message
 * (Kafka's {@code ConsumerRecord}, Spring AMQP's {@code Message}, a {@code jakarta.jms.Message});
 * on Kafka also a batch listener taking a {@code List} of records, messages or payloads — Idem
 * reads the key from the message the container received, opens its transaction through the
 * application's transaction manager, claims the key and runs the method's body in that
 * transaction, so the body's {@code JdbcTemplate}/JPA/MyBatis-Spring writes commit with the
 * processed-events marker. The method then returns normally (for a duplicate without running the
 * body, returning {@code null}), and the container acknowledges after Idem's commit.
 *
 * <p>The key, in this order: the parameter annotated {@link IdempotencyKey}; {@link #key()}, a SpEL
 * expression over the arguments; {@link #keyHeader()}; {@link #keyJsonPointer()}; otherwise {@code
 * idem.key.*} (Idem's defaults: the {@code idempotency-key} header, then the CloudEvents id).
 *
 * <p>Retries and dead letters are decided by Idem's {@code RetryPolicy} ({@code idem.retry.*}),
 * whatever the container's own error handling says: on Kafka, Idem retries inside the call (as
 * long as {@code max.poll.interval.ms} allows, then it seeks the record back and pauses its
 * partition for the rest of the backoff — never counted by Spring's error handler, never skipped
 * by it); on RabbitMQ, JMS and SQS it waits the backoff on the listener thread and has the
 * container redeliver. A message out of attempts, without a key, or whose key was committed with
 * another payload is copied to the dead-letter destination with the reason headers and the method
 * returns normally (docs/SPRING-BOOT.md).
 *
 * <p>Refused at start-up (the application context fails with the reason, the container and the
 * setting to change): a parameter with which the method could acknowledge by itself (Kafka's
 * {@code Acknowledgment} or {@code Consumer}, an AMQP {@code Channel}, an SQS {@code
 * Acknowledgement}), and the container settings under which a message could be acknowledged
 * before Idem's commit or dropped after a failure (the table "container setting → what Idem does"
 * in docs/SPRING-BOOT.md). At run time, a method called inside a Spring transaction (which Idem
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

  /**
   * A SpEL expression giving the key from the method's arguments, e.g. {@code "#order.id"} (by
   * parameter name, compiled with {@code -parameters}) or {@code "#p0.id"}; empty: not used. Not
   * for batch listeners (use {@link #keyHeader()} or {@link #keyJsonPointer()} there). A {@code
   * null} or blank result dead-letters the message ({@code NO_KEY}, {@code INVALID_KEY}).
   */
  String key() default "";

  /** Read the key from this header (Kafka header, AMQP header, JMS property, SQS attribute). */
  String keyHeader() default "";

  /** Read the key from the JSON payload at this RFC 6901 pointer, e.g. {@code /orderId}. */
  String keyJsonPointer() default "";
}
