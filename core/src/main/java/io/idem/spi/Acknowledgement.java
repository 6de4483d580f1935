package io.idem.spi;

import io.idem.DeadLetterReason;
import java.time.Duration;

/**
 * How one delivery is settled with its broker. Each adapter implements it with that broker's
 * rules (Kafka offset commit, AMQP basicAck on the delivering channel, SQS DeleteMessage with the
 * current receipt handle, JMS session commit).
 *
 * <p>The pipeline calls exactly one method, once, on the thread that called
 * {@link io.idem.IdempotentConsumer#process}, and only after the store transaction has ended. A
 * method that throws leaves the message unsettled: the broker redelivers it and the store
 * deduplicates, so implementations must never report success they did not get.
 */
public interface Acknowledgement {

  /** The message is done (processed or duplicate): remove it from the broker. */
  void ack();

  /**
   * The message failed and was rolled back: have it delivered again, no sooner than {@code delay}
   * where the broker allows it (documented per adapter).
   *
   * @param delay the backoff, not negative
   */
  void retry(Duration delay);

  /**
   * The store could not be reached ({@link io.idem.StoreUnavailableException}: database down,
   * connection lost, pool exhausted, serialization failure or deadlock) and the transaction rolled
   * back: nothing is known to be wrong with the message, so it must not move closer to a
   * dead-letter destination. Have it processed again after {@code delay}.
   *
   * <p>The default calls {@link #retry(Duration)}. Adapters whose broker counts every return
   * toward its own dead-letter limit (JMS {@code max-delivery-attempts}, RabbitMQ quorum
   * {@code x-delivery-limit}, SQS {@code maxReceiveCount}) should instead keep the delivery and run
   * it through the pipeline again after {@code delay}, so that a long database outage does not
   * dead-letter good messages; adapters that count attempts themselves should not count this one.
   *
   * @param delay the backoff, not negative
   */
  default void retryWhenStoreAvailable(Duration delay) {
    retry(delay);
  }

  /**
   * The message cannot be applied: move it to the dead-letter destination with the reason
   * ({@link DeadLetterReason#toHeaders()}), then remove it from its source. Only when the
   * dead-letter copy is safely stored may the original be removed.
   */
  void deadLetter(DeadLetterReason reason);
}
