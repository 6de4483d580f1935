package io.idem.rabbitmq;

/** The adapter kit on classic queues: attempts tracked by the adapter. */
class RabbitClassicQueueCompatibilityIT extends RabbitAdapterCompatibilityIT {
  @Override
  RabbitQueueType queueType() {
    return RabbitQueueType.CLASSIC;
  }
}
