package io.idem.rabbitmq;

import io.idem.BrokerConsumer;
import io.idem.IdempotentConsumer;
import io.idem.testkit.BrokerHarness;
import io.idem.testkit.DeadLetteredMessage;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/** The kit's view of one test queue: a classic or quorum queue with DLX and DLQ. */
final class RabbitHarness implements BrokerHarness {
  private final TestQueue queue;
  private final AtomicInteger consumers = new AtomicInteger();

  RabbitHarness(String name, RabbitQueueType type) {
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
    RabbitConsumerConfig config = queue.configBuilder()
        .concurrency(2)
        .connectionName("idem-test-" + queue.name + "-" + consumers.incrementAndGet())
        .build();
    return RabbitIdempotentConsumer.create(config, pipeline);
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
