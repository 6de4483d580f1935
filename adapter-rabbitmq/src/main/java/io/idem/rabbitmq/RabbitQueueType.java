package io.idem.rabbitmq;

/**
 * The kind of RabbitMQ queue consumed, as its {@code x-queue-type} argument says. It decides what
 * the adapter declares or verifies, and whether a delivery limit may be set.
 */
public enum RabbitQueueType {
  /**
   * A classic queue. It has no delivery counter: the adapter tracks attempts itself (see
   * {@link RabbitInboundMessage#deliveryAttempt()}).
   */
  CLASSIC("classic"),
  /**
   * A quorum queue (replicated, durable). RabbitMQ counts returns in {@code x-delivery-count},
   * and an {@code x-delivery-limit} makes it dead-letter — or, without a dead-letter exchange,
   * drop — a message returned more often than the limit.
   */
  QUORUM("quorum");

  private final String argument;

  RabbitQueueType(String argument) {
    this.argument = argument;
  }

  /** The {@code x-queue-type} argument value: {@code classic} or {@code quorum}. */
  public String argument() {
    return argument;
  }
}
