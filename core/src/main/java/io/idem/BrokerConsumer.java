package io.idem;

/**
 * The lifecycle every broker adapter's consumer shares ({@code KafkaIdempotentConsumer},
 * {@code RabbitIdempotentConsumer}, {@code SqsIdempotentConsumer}, {@code JmsIdempotentConsumer}).
 */
public interface BrokerConsumer extends AutoCloseable {

  /**
   * Connects and starts consuming on the adapter's own threads; returns once consumption started.
   *
   * @throws IllegalStateException when already started or closed
   * @throws IdempotencyException when the broker refuses the configuration (for example a
   *     dead-letter destination that does not exist)
   */
  void start();

  /**
   * Stops gracefully: stops fetching, lets in-flight messages finish and settles them (committed
   * ones acked, the rest left for redelivery), then disconnects. Blocks up to the adapter's
   * configured shutdown timeout; idempotent. Never acknowledges a message that did not commit.
   */
  @Override
  void close();

  /** True between a successful {@link #start()} and {@link #close()}. */
  boolean isRunning();
}
