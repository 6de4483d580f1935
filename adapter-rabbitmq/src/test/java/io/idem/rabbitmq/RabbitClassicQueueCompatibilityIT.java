package io.idem.rabbitmq;

import java.util.OptionalInt;

/**
 * The adapter kit on classic queues (attempts tracked by the adapter) in per-message mode, set
 * explicitly: {@code maxBatchSize(1)}, one transaction and one ack per delivery, with runs.
 */
class RabbitClassicQueueCompatibilityIT extends RabbitAdapterCompatibilityIT {
  @Override
  RabbitQueueType queueType() {
    return RabbitQueueType.CLASSIC;
  }

  @Override
  OptionalInt maxBatchSize() {
    return OptionalInt.of(1);
  }
}
