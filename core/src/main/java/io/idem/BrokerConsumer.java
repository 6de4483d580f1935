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

  /**
   * A snapshot of what the consumer is doing (connected, what it consumes, last receive, messages
   * held for a retry, the store's health), for readiness probes; see {@link ConsumerHealth}.
   * Thread-safe; no broker or database access. The four adapters override it; the default knows
   * only {@link #isRunning()}.
   */
  default ConsumerHealth health() {
    boolean running = isRunning();
    return new ConsumerHealth(running, running, java.util.List.of(), null, 0, new StoreHealth(0, null, null));
  }
}
