package io.idem.rabbitmq;

import java.util.OptionalInt;

/**
 * The adapter kit on quorum queues (attempts from x-delivery-count, delivery limit with DLX) with
 * the default configuration: batch mode ({@link RabbitConsumerConfig#DEFAULT_MAX_BATCH_SIZE}, the
 * prefetch derived from it).
 */
class RabbitQuorumQueueCompatibilityIT extends RabbitAdapterCompatibilityIT {
  @Override
  RabbitQueueType queueType() {
    return RabbitQueueType.QUORUM;
  }

  @Override
  OptionalInt maxBatchSize() {
    return OptionalInt.empty();
  }
}
