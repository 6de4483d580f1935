package io.idem.rabbitmq;

/** The adapter kit on quorum queues: attempts from x-delivery-count, delivery limit with DLX. */
class RabbitQuorumQueueCompatibilityIT extends RabbitAdapterCompatibilityIT {
  @Override
  RabbitQueueType queueType() {
    return RabbitQueueType.QUORUM;
  }
}
