package io.idem.rabbitmq;

import io.idem.BrokerConsumer;
import io.idem.IdempotentConsumer;
import io.idem.testkit.BrokerHarness;
import io.idem.testkit.DeadLetteredMessage;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The kit's view of one test queue: a classic or quorum queue with DLX and DLQ; its consumers run
 * with two workers and the {@code maxBatchSize} given (else the builder's default, batch mode).
 */
final class RabbitHarness implements BrokerHarness {
  private final TestQueue queue;
  private final OptionalInt maxBatchSize;
  private final AtomicInteger consumers = new AtomicInteger();

  RabbitHarness(String name, RabbitQueueType type) {
    this(name, type, OptionalInt.empty());
  }

  RabbitHarness(String name, RabbitQueueType type, OptionalInt maxBatchSize) {
    this.maxBatchSize = maxBatchSize;
    try {
      this.queue = TestQueue.declare(name, type);
    } catch (Exception e) {
      throw new IllegalStateException("could not declare test queue " + name + ": " + e, e);
    }
  }

  @Override
  public String destination() {
    return queue.name;
  }

  @Override
  public void publish(Map<String, String> headers, byte[] payload) {
    queue.publish(headers, payload);
  }

  @Override
  public <C> BrokerConsumer newConsumer(IdempotentConsumer<C> pipeline) {
    RabbitConsumerConfig.Builder config = queue.configBuilder()
        .concurrency(2)
        .connectionName("idem-test-" + queue.name + "-" + consumers.incrementAndGet());
    maxBatchSize.ifPresent(config::maxBatchSize);
    return RabbitIdempotentConsumer.create(config.build(), pipeline);
  }

  @Override
  public List<DeadLetteredMessage> deadLetters() {
    return queue.deadLetters();
  }

  @Override
  public long pendingCount() {
    return queue.ready();
  }

  @Override
  public void close() {
    queue.close();
  }
}
