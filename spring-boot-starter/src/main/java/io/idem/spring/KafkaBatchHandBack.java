package io.idem.spring;

import io.idem.ProcessingOutcome;
import java.time.Duration;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;

/**
 * A Kafka batch listener's call handed back part of its poll: for each partition with records
 * Idem has not settled, the offset of the first of them (the records before it, and every record
 * of the other partitions, were settled) and how long to pause the partition. {@link
 * IdemKafkaErrorHandler} commits the settled records, seeks these partitions back and pauses them.
 */
final class KafkaBatchHandBack extends IdempotentRetryException {
  private static final long serialVersionUID = 1L;

  private final transient Map<TopicPartition, Long> firstUnsettled;
  private final transient Map<TopicPartition, Duration> pauses;

  KafkaBatchHandBack(ProcessingOutcome outcome, Map<TopicPartition, Long> firstUnsettled,
      Map<TopicPartition, Duration> pauses) {
    super(outcome, "batch " + firstUnsettled, Duration.ZERO,
        pauses.values().stream().max(Duration::compareTo).orElse(Duration.ZERO));
    this.firstUnsettled = Map.copyOf(firstUnsettled);
    this.pauses = Map.copyOf(pauses);
  }

  Map<TopicPartition, Long> firstUnsettled() {
    return firstUnsettled;
  }

  Map<TopicPartition, Duration> pauses() {
    return pauses;
  }
}
