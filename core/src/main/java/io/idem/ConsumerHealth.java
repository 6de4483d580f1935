package io.idem;

import java.time.Instant;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * What a {@link BrokerConsumer} is doing, for readiness probes and dashboards — more than {@link
 * BrokerConsumer#isRunning()} (which only says that {@code start()} succeeded and {@code close()}
 * was not called). A snapshot; building it touches neither the broker nor the database.
 *
 * @param running {@link BrokerConsumer#isRunning()}
 * @param connected the adapter holds a live broker connection (Kafka: the consumer is in its group
 *     with a live coordinator as far as the client knows; RabbitMQ: connection and channels open;
 *     SQS: the last receive call did not fail; JMS: the connection has no pending exception)
 * @param consuming what is being consumed right now: Kafka the assigned partitions
 *     ({@code topic-partition}), the others the queue while a consumer is registered; empty when
 *     nothing is assigned
 * @param lastReceive when the last poll/receive returned without an error, or {@code null} if none
 *     has yet
 * @param heldForRetry messages the adapter holds in process for a retry or a store outage (not
 *     yet handed back to the broker)
 * @param store the pipeline's {@link StoreHealth}
 */
public record ConsumerHealth(
    boolean running,
    boolean connected,
    List<String> consuming,
    @Nullable Instant lastReceive,
    int heldForRetry,
    StoreHealth store) {

  public ConsumerHealth {
    consuming = List.copyOf(consuming);
  }

  /**
   * Ready to do work: running, connected, and the store reaches the database. An idle consumer
   * (no partitions assigned, no message received for a while) is still ready.
   */
  public boolean isReady() {
    return running && connected && store.isAvailable();
  }
}
