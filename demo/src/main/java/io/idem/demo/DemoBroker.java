package io.idem.demo;

import io.idem.BrokerConsumer;
import io.idem.IdempotentConsumer;
import io.idem.spi.OutboxPublisher;
import io.idem.testkit.CrashPoint;
import io.idem.testkit.DeadLetteredMessage;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * One broker as the demo drives it. The parent process {@link #start() starts} (or connects to)
 * the broker, creates a destination, publishes, and reads the leftovers; the consumer process
 * rebuilds a {@code DemoBroker} from {@link #connectionArgs()} and asks it for an adapter
 * consumer.
 */
public interface DemoBroker extends AutoCloseable {

  /** {@code kafka}, {@code rabbitmq}, {@code sqs} or {@code jms}. */
  String name();

  /**
   * The adapter's default most messages per transaction ({@code DEFAULT_MAX_BATCH_SIZE} of its
   * config): what {@code --batch} is when not given, so the main job runs the README's quick start.
   */
  int defaultMaxBatchSize();

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

  /**
   * In the consumer process: an adapter consumer of {@code destination} running {@code pipeline}
   * with at most {@code maxBatchSize} messages per transaction (1: per-message mode).
   *
   * @throws UnsupportedOperationException when this broker's adapter has no batch mode
   */
  default BrokerConsumer consumer(String destination, IdempotentConsumer<?> pipeline, int maxBatchSize) {
    if (maxBatchSize == 1) {
      return consumer(destination, pipeline);
    }
    throw new UnsupportedOperationException(name() + " has no batch mode in the main job yet");
  }

  /**
   * As {@link #consumer(String, IdempotentConsumer, int)}; with {@code crashes} not null, the
   * adapter runs on broker clients wrapped by it, so that the crash points inside broker calls
   * ({@link CrashPoint#DURING_ACK}, {@link CrashPoint#DEAD_LETTER_COPY_STORED}) land in this
   * broker's acknowledging and dead-letter-storing calls (listed in {@link BrokerCallCrashes}).
   */
  BrokerConsumer consumer(String destination, IdempotentConsumer<?> pipeline, int maxBatchSize,
      @Nullable BrokerCallCrashes crashes);

  /**
   * The fewest broker calls that pass {@link CrashPoint#DURING_ACK} while {@code messages} more
   * messages are settled (one per message or batch by default), so that a planned crash after
   * that many passes is sure to happen.
   */
  default long settlingCallsAtLeast(long messages, int maxBatchSize) {
    return messages / Math.max(1, maxBatchSize);
  }

  /**
   * JVM options the consumer process needs for {@code point} to exist on this broker (JMS: a
   * {@code CLIENT_ACKNOWLEDGE} session for {@link CrashPoint#DEAD_LETTER_COPY_STORED}, where a
   * transacted session stores the copy and removes the original in one commit); none by default.
   */
  default List<String> consumerJvmArgs(CrashPoint point) {
    return List.of();
  }

  /**
   * In the relay process: this adapter's {@link OutboxPublisher} (Kafka {@code
   * KafkaOutboxPublisher}, RabbitMQ {@code RabbitOutboxPublisher} on the default exchange, SQS
   * {@code SqsOutboxPublisher}, JMS {@code JmsOutboxPublisher}); the caller closes it.
   *
   * @throws IllegalStateException when the broker cannot be reached
   */
  OutboxPublisher outboxPublisher();

  /**
   * The outbox row's destination that makes {@link #outboxPublisher()} send to {@code destination}:
   * the topic or queue name itself, the queue URL on SQS.
   */
  default String outboxDestination(String destination) {
    return destination;
  }

  /** Messages of {@code destination} not yet acknowledged by consumer group {@code group}. */
  long pending(String destination, String group);

  /** Messages in the destination's dead-letter destination. */
  long deadLettered(String destination);

  /**
   * The messages in the destination's dead-letter destination, read back without removing them
   * (Kafka: the {@code .DLT} topic from its start; RabbitMQ: fetched unacknowledged, then returned;
   * SQS: received, then made visible again; JMS: browsed), in the broker's order. Headers are
   * the original ones plus {@link io.idem.DeadLetterReason#toHeaders() the reason}, as the adapter
   * reads headers: values that are not valid UTF-8 are left out; JMS properties appear under their
   * own names ({@code idem_dead_letter_cause}) and their dash aliases
   * ({@code idem-dead-letter-cause}). Payloads as stored. Blocks until read; not for a
   * dead-letter destination someone else consumes at the same time.
   *
   * @throws IllegalStateException when the broker cannot be read
   */
  List<DeadLetteredMessage> readDeadLetters(String destination);

  /** Deletes the destination and its dead-letter destination after a successful run. */
  void deleteDestination(String destination);

  @Override
  void close();
}
