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
   * The message was not at fault and the transaction rolled back: the store's own connection could
   * not reach the database ({@link io.idem.ProcessingOutcome#RETRY_STORE_UNAVAILABLE}), or
   * PostgreSQL asked for the transaction to be retried / the claim timed out waiting for another
   * instance's lock ({@link io.idem.ProcessingOutcome#RETRY_TRANSACTION}). The message must not
   * move closer to a dead-letter destination: have it processed again after {@code delay}.
   *
   * <p>The default calls {@link #retry(Duration)}. Adapters whose broker counts every return
   * toward its own dead-letter limit (JMS {@code max-delivery-attempts}, RabbitMQ quorum
   * {@code x-delivery-limit}, SQS {@code maxReceiveCount}) should instead keep the delivery and run
   * it through the pipeline again after {@code delay}, so that a long database outage does not
   * dead-letter good messages; adapters that count attempts themselves must not count this one.
   *
   * @param delay the backoff, not negative
   */
  default void retryWhenStoreAvailable(Duration delay) {
    retry(delay);
  }

  /**
   * The consumer is shutting down and interrupted the work ({@link
   * io.idem.ProcessingOutcome#RELEASED}); the transaction rolled back. Hand the message back to the
   * broker unacknowledged, as a prefetched message that was never started is handed back at close:
   * it must not use up an attempt nor move closer to a dead-letter limit where the broker lets the
   * client choose (RabbitMQ {@code basic.nack} with requeue rather than {@code basic.reject} on 4.3+;
   * SQS visibility 0; Kafka: not committed).
   *
   * <p>The default calls {@link #retryWhenStoreAvailable(Duration)} with {@link Duration#ZERO};
   * an adapter whose {@code close()} hands held messages back is then correct as it is.
   */
  default void release() {
    retryWhenStoreAvailable(Duration.ZERO);
  }

  /**
   * The message cannot be applied: move it to the dead-letter destination with the reason
   * ({@link DeadLetterReason#toHeaders()}), then remove it from its source. Only when the
   * dead-letter copy is safely stored may the original be removed.
   */
  void deadLetter(DeadLetterReason reason);
}
