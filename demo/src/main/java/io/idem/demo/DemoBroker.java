package io.idem.demo;

import io.idem.BrokerConsumer;
import io.idem.IdempotentConsumer;
import java.util.List;

/**
 * One broker as the demo drives it. The parent process {@link #start() starts} (or connects to)
 * the broker, creates a destination, publishes, and reads the leftovers; the consumer process
 * rebuilds a {@code DemoBroker} from {@link #connectionArgs()} and asks it for an adapter
 * consumer.
 */
public interface DemoBroker extends AutoCloseable {

  /** {@code kafka}, {@code rabbitmq}, {@code sqs} or {@code jms}. */
  String name();

  /** Starts the embedded broker or connects to the real one; returns a line saying which. */
  String start();

  /** Creates the destination (and its dead-letter destination) for a run. */
  void createDestination(String destination);

  /** Publishes messages in order; blocks until the broker acknowledged every one. */
  void publish(String destination, List<Outbound> messages);

  /**
   * Whether header values that are not valid UTF-8 can be published (Kafka headers, AMQP byte
   * arrays, SQS binary attributes: yes; JMS string properties: no).
   */
  default boolean supportsBinaryHeaders() {
    return true;
  }

  /** Arguments that let the consumer process reach this broker ({@code --name=value} form). */
  List<String> connectionArgs();

  /** In the consumer process: an adapter consumer of {@code destination} running {@code pipeline}. */
  BrokerConsumer consumer(String destination, IdempotentConsumer<?> pipeline);

  /** Messages of {@code destination} not yet acknowledged by consumer group {@code group}. */
  long pending(String destination, String group);

  /** Messages in the destination's dead-letter destination. */
  long deadLettered(String destination);

  /** Deletes the destination and its dead-letter destination after a successful run. */
  void deleteDestination(String destination);

  @Override
  void close();
}
