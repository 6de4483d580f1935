package io.idem.testkit;

import io.idem.BrokerConsumer;
import io.idem.IdempotentConsumer;
import java.util.List;
import java.util.Map;

/**
 * One broker destination under test, as a {@link BrokerAdapterCompatibilityKit} sees it: each
 * adapter module implements this once (≈ 50 lines) against its real broker. A harness owns a
 * fresh, uniquely named destination (topic, queue) and its dead-letter destination, and deletes
 * both on {@link #close()}.
 */
public interface BrokerHarness extends AutoCloseable {

  /** The topic or queue name, as {@link io.idem.InboundMessage#source()} reports it. */
  String destination();

  /**
   * Publishes one message, waiting until the broker accepted it.
   *
   * @param headers headers / properties / message attributes (UTF-8 text values)
   * @param payload the body bytes, delivered unchanged
   */
  void publish(Map<String, String> headers, byte[] payload);

  /**
   * Builds (does not start) an adapter consumer reading {@link #destination()} with
   * {@code pipeline}; its consumer group, where the broker has one, is
   * {@code pipeline.consumerGroup()}. Each call returns an independent instance (its own
   * connection), so that two instances compete for the same messages.
   */
  <C> BrokerConsumer newConsumer(IdempotentConsumer<C> pipeline);

  /**
   * Every message that reached the dead-letter destination so far, oldest first. The harness may
   * drain the broker's dead-letter destination into its own list; repeated calls return at least
   * what earlier calls returned.
   */
  List<DeadLetteredMessage> deadLetters();

  /**
   * Messages of {@link #destination()} not yet acknowledged for the consumer group (ready plus in
   * flight; for Kafka, committed offset behind the end offset). Called after every consumer was
   * closed, 0 means "everything was settled".
   */
  long pendingCount();

  /**
   * Tells the harness the consumer group whose {@link #pendingCount()} is asked when no consumer
   * was built through {@link #newConsumer} ({@link CrashMatrix}: the consumers run in a child
   * JVM). Only a harness whose pending count depends on the group (Kafka: the group's committed
   * offsets) needs to override it; the default does nothing.
   */
  default void useConsumerGroup(String group) {}

  /** Deletes the destination and its dead-letter destination; releases connections. */
  @Override
  void close();
}
