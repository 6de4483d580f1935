package io.idem.spi;

/**
 * Sends transactional-outbox rows to one kind of destination (a broker, an HTTP API), implemented
 * once per adapter ({@code KafkaOutboxPublisher}, {@code RabbitOutboxPublisher}, {@code
 * SqsOutboxPublisher}, {@code JmsOutboxPublisher}) and by applications for anything else.
 *
 * <p>Contract, which the relay relies on:
 *
 * <ul>
 *   <li>{@link #publish} returns only once the destination has <em>confirmed</em> the message
 *       (Kafka acks=all, a RabbitMQ publisher confirm, an SQS response, a JMS persistent send, an
 *       HTTP 2xx); the relay marks the row sent after it returns;
 *   <li>it throws when the message was not confirmed, or may not have been: the relay then retries
 *       the row later with backoff, so a publish may repeat; the copy must carry {@link
 *       OutboxMessage#idempotencyKey()} so that the consumer deduplicates a repeat;
 *   <li>throw {@link io.idem.NonRetryableException} when no retry can succeed (the row is parked at
 *       once, with the reason);
 *   <li>it is called by one relay thread at a time per instance, but several relay instances may
 *       call several publisher instances at once: an implementation is thread-safe or
 *       used by one relay.
 * </ul>
 */
public interface OutboxPublisher extends AutoCloseable {

  /**
   * Sends {@code message} to {@link OutboxMessage#destination()} and waits for its confirmation.
   *
   * @throws Exception when it was not confirmed (timeout, refusal, unroutable, broken connection);
   *     the relay records its message as the row's last error
   */
  void publish(OutboxMessage message) throws Exception;

  /** Releases what the publisher holds (producers, channels); by default nothing. */
  @Override
  default void close() throws Exception {}
}
