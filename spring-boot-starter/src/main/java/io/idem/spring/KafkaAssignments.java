package io.idem.spring;

import java.util.Collection;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.jspecify.annotations.Nullable;
import org.springframework.kafka.listener.ConsumerAwareRebalanceListener;

/**
 * Which records of one Spring Kafka container may have been handed to a handler before without
 * that run being counted (docs/FAILURES.md, "Attempts that survive the process"): Kafka has no
 * redelivered flag, so after a process death the records from the committed offset on come back
 * looking new, the one whose handler killed the process among them. The rule: the records of a
 * partition are flagged ({@link #mayBeRedelivered}) from the moment this consumer thread got the
 * partition — at the container's start, or assigned by a rebalance — until this process has
 * applied one of them ({@link #applied}: the outcome {@code PROCESSED}). A duplicate does not end
 * it (the previous owner applied it and died before committing the offset, maybe in the handler
 * of the next record), nor does a dead letter. Records are handled in offset order per partition,
 * so a record after one this life applied was never run by an earlier one; the container's own
 * in-life retries are known to {@link ListenerAttempts} and never flagged.
 *
 * <p>Installed as the container's {@link ConsumerRebalanceListener}, composed with the one it had
 * (the application's, or Spring Kafka's logging default), which keeps getting every callback as
 * Spring Kafka would have called it: a {@link ConsumerAwareRebalanceListener} its consumer-aware
 * methods, any other its plain ones. Without rebalance callbacks (a container with manual
 * assignment) a partition stays flagged until a record of it is applied, which is the same rule.
 * Kept per consumer thread (a {@code ConcurrentMessageListenerContainer}'s children share it):
 * a partition applied on another thread is flagged again on this one, so a race between an old
 * and a new owner flags more, never less. Holds one entry per partition. Thread-safe.
 */
final class KafkaAssignments implements ConsumerAwareRebalanceListener {
  private final @Nullable ConsumerRebalanceListener delegate;
  /** Partitions where a record was applied in this life, with the consumer thread that did it. */
  private final Map<TopicPartition, Thread> applied = new ConcurrentHashMap<>();

  /** Around the container's rebalance listener {@code delegate}, or none when {@code null}. */
  KafkaAssignments(@Nullable ConsumerRebalanceListener delegate) {
    this.delegate = delegate;
  }

  /** The container's own rebalance listener that this one calls, or {@code null}. */
  @Nullable ConsumerRebalanceListener delegate() {
    return delegate;
  }

  /**
   * Whether {@code message} (a {@link ConsumerRecord}) may have been handed to a handler before:
   * no record of its partition was applied by this consumer thread since it got the partition.
   * {@code false} for anything but a record.
   */
  boolean mayBeRedelivered(Object message) {
    return message instanceof ConsumerRecord<?, ?> record
        && applied.get(new TopicPartition(record.topic(), record.partition())) != Thread.currentThread();
  }

  /**
   * {@code message} (a {@link ConsumerRecord}) was applied on this thread: its partition's next
   * records are not flagged.
   */
  void applied(Object message) {
    if (message instanceof ConsumerRecord<?, ?> record) {
      applied.put(new TopicPartition(record.topic(), record.partition()), Thread.currentThread());
    }
  }

  private void fresh(Collection<TopicPartition> partitions) {
    partitions.forEach(applied::remove);
  }

  @Override
  public void onPartitionsAssigned(Consumer<?, ?> consumer, Collection<TopicPartition> partitions) {
    fresh(partitions);
    if (delegate instanceof ConsumerAwareRebalanceListener aware) {
      aware.onPartitionsAssigned(consumer, partitions);
    } else if (delegate != null) {
      delegate.onPartitionsAssigned(partitions);
    }
  }

  @Override
  public void onPartitionsRevokedBeforeCommit(Consumer<?, ?> consumer, Collection<TopicPartition> partitions) {
    fresh(partitions);
    if (delegate instanceof ConsumerAwareRebalanceListener aware) {
      aware.onPartitionsRevokedBeforeCommit(consumer, partitions);
    } else if (delegate != null) {
      delegate.onPartitionsRevoked(partitions);
    }
  }

  @Override
  public void onPartitionsRevokedAfterCommit(Consumer<?, ?> consumer, Collection<TopicPartition> partitions) {
    if (delegate instanceof ConsumerAwareRebalanceListener aware) {
      aware.onPartitionsRevokedAfterCommit(consumer, partitions);
    }
  }

  @Override
  public void onPartitionsLost(Consumer<?, ?> consumer, Collection<TopicPartition> partitions) {
    fresh(partitions);
    if (delegate instanceof ConsumerAwareRebalanceListener aware) {
      aware.onPartitionsLost(consumer, partitions);
    } else if (delegate != null) {
      delegate.onPartitionsLost(partitions);
    }
  }

  // the plain callbacks, for a caller that does not know the consumer-aware ones

  @Override
  public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
    fresh(partitions);
    if (delegate != null) {
      delegate.onPartitionsAssigned(partitions);
    }
  }

  @Override
  public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
    fresh(partitions);
    if (delegate != null) {
      delegate.onPartitionsRevoked(partitions);
    }
  }

  @Override
  public void onPartitionsLost(Collection<TopicPartition> partitions) {
    fresh(partitions);
    if (delegate != null) {
      delegate.onPartitionsLost(partitions);
    }
  }
}
