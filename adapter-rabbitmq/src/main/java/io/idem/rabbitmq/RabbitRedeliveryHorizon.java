package io.idem.rabbitmq;

import io.idem.spi.RedeliveryHorizon;
import java.time.Duration;
import java.util.Objects;

/**
 * The redelivery horizon of a RabbitMQ queue, declared by the user: the broker keeps a message
 * until it is acked, expires ({@code x-message-ttl}, a per-message {@code expiration}) or is
 * dead-lettered after the delivery limit, and none of that can be asked of it in a way that bounds
 * every path (a DLX that routes back, a shovel, a re-publish by the application). So the user
 * states the longest time a message can still be delivered after its first delivery: typically
 * the queue's message TTL plus the longest retry loop (attempts times the largest backoff).
 */
public final class RabbitRedeliveryHorizon {
  private RabbitRedeliveryHorizon() {}

  /**
   * @param queue the queue, for messages
   * @param messageTtl the queue's (or the messages') TTL: how long a message may wait unacked
   * @param retries the longest a message can spend in retries (delayed requeues) after that
   * @throws IllegalArgumentException when a duration is negative
   */
  public static RedeliveryHorizon declared(String queue, Duration messageTtl, Duration retries) {
    Objects.requireNonNull(queue, "queue");
    nonNegative("messageTtl", messageTtl);
    nonNegative("retries", retries);
    return RedeliveryHorizon.declared("rabbitmq queue " + queue, messageTtl.plus(retries),
        "message TTL " + messageTtl + " + retries " + retries);
  }

  private static void nonNegative(String setting, Duration value) {
    if (Objects.requireNonNull(value, setting).isNegative()) {
      throw new IllegalArgumentException(setting + " must not be negative, but was " + value);
    }
  }
}
