package io.idem.jms;

import io.idem.spi.RedeliveryHorizon;
import java.time.Duration;
import java.util.Objects;

/**
 * The redelivery horizon of a JMS destination, declared by the user: JMS gives no portable way
 * to read a queue's expiry or redelivery settings (on Artemis: the address settings' {@code
 * expiry-delay}, {@code redelivery-delay} and {@code max-delivery-attempts}; a message's own
 * {@code JMSExpiration}). The user states the longest time a message can still be delivered after
 * its first delivery: the message time-to-live plus the longest redelivery loop (attempts times
 * the largest redelivery delay).
 */
public final class JmsRedeliveryHorizon {
  private JmsRedeliveryHorizon() {}

  /**
   * @param destination the queue, for messages
   * @param timeToLive the messages' time-to-live (the producer's, or the broker's expiry delay)
   * @param redeliveries the longest a message can spend in redeliveries after that
   * @throws IllegalArgumentException when a duration is negative
   */
  public static RedeliveryHorizon declared(String destination, Duration timeToLive, Duration redeliveries) {
    Objects.requireNonNull(destination, "destination");
    if (Objects.requireNonNull(timeToLive, "timeToLive").isNegative()) {
      throw new IllegalArgumentException("timeToLive must not be negative, but was " + timeToLive);
    }
    if (Objects.requireNonNull(redeliveries, "redeliveries").isNegative()) {
      throw new IllegalArgumentException("redeliveries must not be negative, but was " + redeliveries);
    }
    return RedeliveryHorizon.declared("jms queue " + destination, timeToLive.plus(redeliveries),
        "time-to-live " + timeToLive + " + redeliveries " + redeliveries);
  }
}
